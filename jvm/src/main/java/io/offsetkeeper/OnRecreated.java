package io.offsetkeeper;

/**
 * What to do with every stored offset of a topic that was deleted and re-created since the
 * offsets were stored: the topic ID recorded beside them (Kafka 2.8 and later) is not the
 * brokers'. The stored offsets belong to the old topic whatever the new topic's range is, so
 * this policy decides for each of them, and the report shows {@code re-created (id A -> B)}.
 * Brokers older than 2.8 have no topic IDs: nothing is recorded and loads decide as before.
 */
public enum OnRecreated {
    /** Start at the earliest offset of the new topic: every record of it is read (default). */
    EARLIEST,
    /** Start at the latest offset of the new topic: its records so far are skipped. */
    LATEST,
    /** Refuse to load: {@link PolicyViolationException} naming the topic and both IDs. */
    FAIL
}
