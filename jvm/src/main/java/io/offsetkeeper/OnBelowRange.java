package io.offsetkeeper;

/** What to do when the stored offset is below the earliest offset (retention purged it). */
public enum OnBelowRange {
    /** Start at the earliest offset; the report counts the purged records as lost. */
    EARLIEST,
    /** Refuse to load: {@link PolicyViolationException}. */
    FAIL
}
