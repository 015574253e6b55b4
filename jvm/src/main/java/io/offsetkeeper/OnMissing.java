package io.offsetkeeper;

/** Where a partition with no usable stored offset (none, empty, "-1", not a number) starts. */
public enum OnMissing {
    /** At the earliest offset still in the log: no data is skipped. */
    EARLIEST,
    /** At the latest offset: only new records are read. */
    LATEST,
    /** Refuse to load: {@link PolicyViolationException}. */
    FAIL
}
