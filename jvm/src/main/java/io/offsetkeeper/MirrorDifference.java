package io.offsetkeeper;

import java.io.Serializable;

/**
 * A partition where, during a move between stores ({@code offsetkeeper.store=zookeeper,kafka}
 * or {@code kafka,zookeeper}), the mirror held something else than the authoritative store when
 * the load read both: reported by {@link LoadReport#mirrorDifferences()} and in a WARN line.
 * Where the mirror held an offset ahead of the load's choice, within the partition's range and
 * of a topic not re-created, the load started there ({@link #taken()}): the mirror only holds
 * offsets the authoritative store stored before, so no offset moves backwards when the stores
 * switch roles.
 */
public final class MirrorDifference implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final int partition;
    private final Long authoritative;
    private final String authoritativeText;
    private final Long mirror;
    private final String mirrorText;
    private final boolean taken;

    MirrorDifference(String topic, int partition, Long authoritative, String authoritativeText,
            Long mirror, String mirrorText, boolean taken) {
        this.topic = topic;
        this.partition = partition;
        this.authoritative = authoritative;
        this.authoritativeText = authoritativeText;
        this.mirror = mirror;
        this.mirrorText = mirrorText;
        this.taken = taken;
    }

    public String topic() {
        return topic;
    }

    public int partition() {
        return partition;
    }

    /** The offset the authoritative store holds, or null when it holds none (or not an offset). */
    public Long authoritative() {
        return authoritative;
    }

    /** What the authoritative store holds as the report shows it: the offset, {@code none}, ... */
    public String authoritativeText() {
        return authoritativeText;
    }

    /** The offset the mirror holds, or null when it holds none (or not an offset). */
    public Long mirror() {
        return mirror;
    }

    /** What the mirror holds as the report shows it. */
    public String mirrorText() {
        return mirrorText;
    }

    /** Whether the load started at the mirror's offset (it was ahead; see the class). */
    public boolean taken() {
        return taken;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + ": authoritative " + authoritativeText + ", mirror "
                + mirrorText + (taken ? " (started at the mirror's)" : "");
    }
}
