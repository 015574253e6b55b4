package io.offsetkeeper;

/**
 * The root of offsetkeeper's failures: servers, policies, and internal errors (a native panic
 * arrives as this class). Bad arguments are {@link IllegalArgumentException}s instead, and use
 * of a closed {@link OffsetKeeper} is an {@link IllegalStateException}.
 */
public class OffsetKeeperException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public OffsetKeeperException(String message) {
        super(message);
    }
}
