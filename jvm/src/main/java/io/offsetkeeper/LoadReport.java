package io.offsetkeeper;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * The result of {@link OffsetKeeper#loadWithReport}: one entry for every partition that exists
 * now, in topic order then partition order, and the offsets stored for partitions that no longer
 * exist, and during a move between stores the partitions where the mirror differed.
 * {@link #toString()} is a table for the driver's log.
 */
public final class LoadReport implements Serializable {
    private static final long serialVersionUID = 1L;

    private final List<PartitionReport> partitions;
    private final List<StalePartition> stale;
    // Null in a report serialized before it existed: read as empty.
    private final List<MirrorDifference> mirror;

    LoadReport(List<PartitionReport> partitions, List<StalePartition> stale) {
        this(partitions, stale, Collections.<MirrorDifference>emptyList());
    }

    LoadReport(List<PartitionReport> partitions, List<StalePartition> stale,
            List<MirrorDifference> mirror) {
        this.partitions = Collections.unmodifiableList(new ArrayList<>(partitions));
        this.stale = Collections.unmodifiableList(new ArrayList<>(stale));
        this.mirror = Collections.unmodifiableList(new ArrayList<>(mirror));
    }

    public List<PartitionReport> partitions() {
        return partitions;
    }

    /**
     * Offsets stored for partitions that no longer exist (the topic was re-created with fewer
     * partitions), in topic then partition order; never in {@link #offsets()}.
     */
    public List<StalePartition> stalePartitions() {
        return stale;
    }

    /**
     * During a move between stores ({@code offsetkeeper.store=zookeeper,kafka} or
     * {@code kafka,zookeeper}), the partitions where the mirror held something else than the
     * authoritative store, in report order; empty with one store, and when the two agree. Where
     * {@link MirrorDifference#taken()}, {@link #offsets()} holds the mirror's offset.
     */
    public List<MirrorDifference> mirrorDifferences() {
        return mirror == null ? Collections.<MirrorDifference>emptyList() : mirror;
    }

    /** The offsets to hand to Spark, in report order. */
    public Map<TopicPartition, Long> offsets() {
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        for (PartitionReport p : partitions) {
            offsets.put(p.topicPartition(), p.chosen());
        }
        return Collections.unmodifiableMap(offsets);
    }

    /**
     * {@link #offsets()} in the JSON of Spark Structured Streaming's Kafka option
     * {@code startingOffsets}: {@code {"topic":{"0":23,"1":42}}}, topics and partitions in report
     * order. Every partition of the loaded topics is named, as Spark requires for specific
     * offsets, and each offset is a real one (never Spark's -2 earliest or -1 latest).
     */
    public String startingOffsetsJson() {
        // Grouped by topic whatever the order, so that no topic is a key twice.
        Map<String, StringBuilder> byTopic = new LinkedHashMap<>();
        for (PartitionReport p : partitions) {
            StringBuilder entries = byTopic.get(p.topic());
            if (entries == null) {
                entries = new StringBuilder();
                byTopic.put(p.topic(), entries);
            } else {
                entries.append(',');
            }
            entries.append('"').append(p.partition()).append("\":").append(p.chosen());
        }
        StringBuilder json = new StringBuilder("{");
        for (Map.Entry<String, StringBuilder> e : byTopic.entrySet()) {
            if (json.length() > 1) {
                json.append(',');
            }
            appendJsonString(json, e.getKey()).append(":{").append(e.getValue()).append('}');
        }
        return json.append('}').toString();
    }

    /**
     * A JSON string (RFC 8259): quote, backslash and control characters escaped. Kafka's topic
     * names never need it ({@code [a-zA-Z0-9._-]}); the engine's names come from the brokers,
     * so escape anyway rather than trust that.
     */
    static StringBuilder appendJsonString(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"');
    }

    /** The partitions whose stored offset was not used as it was. */
    public List<PartitionReport> corrections() {
        List<PartitionReport> corrections = new ArrayList<>();
        for (PartitionReport p : partitions) {
            if (p.action() != Action.KEPT) {
                corrections.add(p);
            }
        }
        return Collections.unmodifiableList(corrections);
    }

    /** A plain-text table, one row per partition, with the columns of the native report. */
    @Override
    public String toString() {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"TOPIC", "PARTITION", "STORED", "EARLIEST", "LATEST", "CHOSEN",
            "ACTION", "LOST"});
        for (PartitionReport p : partitions) {
            rows.add(new String[] {p.topic(), String.valueOf(p.partition()), p.storedText(),
                String.valueOf(p.earliest()), String.valueOf(p.latest()),
                String.valueOf(p.chosen()), p.actionText(), String.valueOf(p.recordsLost())});
        }
        for (StalePartition s : stale) {
            rows.add(new String[] {s.topic(), String.valueOf(s.partition()), s.storedText(), "-",
                "-", "-", "stale (partition no longer exists)", "0"});
        }
        int[] widths = new int[rows.get(0).length];
        for (String[] row : rows) {
            for (int i = 0; i < row.length; i++) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        StringBuilder table = new StringBuilder();
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.length; i++) {
                line.append(String.format("%-" + widths[i] + "s", row[i]));
                if (i + 1 < row.length) {
                    line.append("  ");
                }
            }
            table.append(line.toString().replaceAll("\\s+$", "")).append('\n');
        }
        return table.toString();
    }
}
