package io.offsetkeeper;

/** What to do when the stored offset is above the latest offset (the topic was re-created). */
public enum OnAboveRange {
    /** Start at the earliest offset of the new topic. */
    EARLIEST,
    /** Start at the latest offset of the new topic. */
    LATEST,
    /** Refuse to load: {@link PolicyViolationException}. */
    FAIL
}
