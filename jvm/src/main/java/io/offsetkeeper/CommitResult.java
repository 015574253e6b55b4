package io.offsetkeeper;

import java.io.Serializable;

/** What one {@link OffsetKeeper#commit} did. */
public final class CommitResult implements Serializable {
    private static final long serialVersionUID = 1L;

    static final CommitResult EMPTY = new CommitResult(0, 0, 0);

    private final long written;
    private final long unchanged;
    private final long requests;

    CommitResult(long written, long unchanged, long requests) {
        this.written = written;
        this.unchanged = unchanged;
        this.requests = requests;
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
     * ZooKeeper multi requests sent: 0 when nothing changed, 1 for an ordinary batch, more for a
     * batch beyond one request's size (each request is atomic, the batch then is not).
     */
    public long requests() {
        return requests;
    }

    @Override
    public String toString() {
        return "CommitResult{written=" + written + ", unchanged=" + unchanged + ", requests="
                + requests + "}";
    }
}
