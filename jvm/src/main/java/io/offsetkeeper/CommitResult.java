package io.offsetkeeper;

import java.io.Serializable;
import java.time.Duration;

/** What one {@link OffsetKeeper#commit} did. */
public final class CommitResult implements Serializable {
    private static final long serialVersionUID = 1L;

    static final CommitResult EMPTY = new CommitResult(0, 0, 0, 0, false, 0, 0);

    private final long written;
    private final long unchanged;
    private final long requests;
    private final long skipped;
    private final boolean deferred;
    private final long pending;
    private final long behindMs;

    // Also made by the native commit through this constructor (rust/jni/src/results.rs holds
    // its descriptor; a unit test there checks it against this file).
    CommitResult(long written, long unchanged, long requests, long skipped, boolean deferred,
            long pending, long behindMs) {
        this.written = written;
        this.unchanged = unchanged;
        this.requests = requests;
        this.skipped = skipped;
        this.deferred = deferred;
        this.pending = pending;
        this.behindMs = behindMs;
    }

    /** Offsets created or changed. */
    public long written() {
        return written;
    }

    /** Offsets that already held the committed value. */
    public long unchanged() {
        return unchanged;
    }

    /**
     * ZooKeeper multi requests sent: 1 for an ordinary batch (with fencing on, also when nothing
     * changed: the request then checks the versions), more for a batch beyond one request's size
     * (each request is atomic, the batch then is not), 0 when nothing was sent.
     */
    public long requests() {
        return requests;
    }

    /**
     * Offsets left out because they were below what this keeper already committed for their
     * partition (batches finishing out of order); a WARN line names them.
     */
    public long skipped() {
        return skipped;
    }

    /**
     * Whether ZooKeeper could not be reached: nothing was written, and the offsets are kept for
     * the next commit of the group, which writes them with its own in one multi (or
     * {@link OffsetKeeper#close()}, which tries once). A WARN line says how far behind the
     * stored offsets are. Commits throw {@link ServerTimeoutException} instead once they have
     * failed for longer than the commit outage tolerance.
     */
    public boolean deferred() {
        return deferred;
    }

    /** Partitions whose newest offset is not stored yet; 0 unless {@link #deferred()}. */
    public long pending() {
        return pending;
    }

    /**
     * How long the stored offsets have been behind: since the start of the first deferred
     * commit of this run of failures; zero unless {@link #deferred()}.
     */
    public Duration behind() {
        return Duration.ofMillis(behindMs);
    }

    @Override
    public String toString() {
        return "CommitResult{written=" + written + ", unchanged=" + unchanged + ", requests="
                + requests + ", skipped=" + skipped + (deferred ? ", deferred, pending=" + pending
                        + ", behindMs=" + behindMs : "") + "}";
    }
}
