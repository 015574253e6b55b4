package io.offsetkeeper;

import java.io.Serializable;

/** What one {@link OffsetKeeper#commit} did. */
public final class CommitResult implements Serializable {
    private static final long serialVersionUID = 1L;

    static final CommitResult EMPTY = new CommitResult(0, 0, 0, 0);

    private final long written;
    private final long unchanged;
    private final long requests;
    private final long skipped;

    CommitResult(long written, long unchanged, long requests, long skipped) {
        this.written = written;
        this.unchanged = unchanged;
        this.requests = requests;
        this.skipped = skipped;
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

    @Override
    public String toString() {
        return "CommitResult{written=" + written + ", unchanged=" + unchanged + ", requests="
                + requests + ", skipped=" + skipped + "}";
    }
}
