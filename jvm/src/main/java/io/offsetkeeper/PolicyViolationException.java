package io.offsetkeeper;

/** A validation policy set to {@code FAIL} met a partition it covers; the message lists every refused partition and nothing was loaded. */
public class PolicyViolationException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public PolicyViolationException(String message) {
        super(message);
    }
}
