package io.offsetkeeper.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.offsetkeeper.CommitResult;
import io.offsetkeeper.OffsetKeeper;
import java.io.IOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Mirrors a Structured Streaming query's Kafka positions into ZooKeeper: after each completed
 * micro-batch, the Kafka sources' end offsets (the next offsets to read) are committed for the
 * keeper's group with {@link OffsetKeeper#commit}, so fencing, ownership and monotonic commits
 * are the keeper's. Monitoring that reads {@code /consumers/<group>/offsets} keeps working, and a
 * query whose checkpoint is lost restarts from these offsets
 * ({@link OffsetKeeper#startingOffsetsJson}).
 *
 * <pre>{@code
 * spark.streams().addListener(new ZooKeeperProgressListener(keeper));
 * }</pre>
 *
 * <p>The query's checkpoint stays the source of truth: Spark posts the progress once the batch
 * is in its commit log, and the listener runs later, on Spark's listener thread. The mirror is
 * therefore never ahead of what the sink received, and normally one micro-batch behind at most
 * (a driver that dies before the event is delivered leaves the previous batch's offsets).
 *
 * <p>A failed commit (ZooKeeper down past the keeper's outage tolerance, a conflict with another
 * writer, a closed keeper) never stops the query: it is logged at WARN under the logger
 * {@code offsetkeeper.spark.progress} and counted in {@link #failures()}; the next batch's
 * commit carries the newer offsets. Sources other than Kafka are ignored.
 *
 * <p>Spark calls a listener from one thread; the counters may be read from any. The listener
 * does not close the keeper: the job does, when it stops.
 */
public final class ZooKeeperProgressListener extends StreamingQueryListener {
    private static final long serialVersionUID = 1L; // Spark's listener type is Serializable
    private static final Logger LOG = LoggerFactory.getLogger("offsetkeeper.spark.progress");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final OffsetKeeper keeper;
    private final String queryName;
    private final AtomicLong commits = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private Map<TopicPartition, Long> lastCommitted = Collections.emptyMap();

    /** Mirrors every query of the session that reads from Kafka into the keeper's group. */
    public ZooKeeperProgressListener(OffsetKeeper keeper) {
        this(keeper, null);
    }

    /**
     * Mirrors only the query named {@code queryName} ({@code writeStream().queryName(...)});
     * null for every query of the session.
     */
    public ZooKeeperProgressListener(OffsetKeeper keeper, String queryName) {
        if (keeper == null) {
            throw new IllegalArgumentException("keeper is null");
        }
        this.keeper = keeper;
        this.queryName = queryName;
    }

    /** Commits that reached the keeper and returned (deferred ones included). */
    public long commits() {
        return commits.get();
    }

    /** Commits that threw; each was logged at WARN. */
    public long failures() {
        return failures.get();
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {
        // Nothing to mirror before a batch completed.
    }

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
        StreamingQueryProgress progress = event.progress();
        if (queryName != null && !queryName.equals(progress.name())) {
            return;
        }
        Map<TopicPartition, Long> offsets = kafkaEndOffsets(progress.sources());
        synchronized (this) {
            // Progress without new data repeats the same offsets: no ZooKeeper round trip.
            if (offsets.isEmpty() || offsets.equals(lastCommitted)) {
                return;
            }
            try {
                CommitResult result = keeper.commit(offsets);
                commits.incrementAndGet();
                if (!result.deferred()) {
                    lastCommitted = offsets;
                }
            } catch (RuntimeException e) {
                failures.incrementAndGet();
                // The keeper's messages name no secret; its configuration is not logged here.
                LOG.warn("offsetkeeper: the offsets of query {} batch {} were not written to "
                        + "ZooKeeper for group {} ({}: {}); the query goes on, the next batch's "
                        + "commit tries again with newer ones", progress.id(), progress.batchId(), keeper.group(),
                        e.getClass().getSimpleName(), e.getMessage());
            }
        }
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {
        // The last batch's offsets came with its progress event.
    }

    /**
     * The end offsets of the Kafka sources, by partition. A Kafka source's description starts
     * with {@code Kafka} ({@code KafkaV2[Subscribe[orders]]}, {@code KafkaSourceV1[...]}) and its
     * offsets are {@code {"topic":{"0":23}}}; anything else is skipped.
     */
    static Map<TopicPartition, Long> kafkaEndOffsets(SourceProgress[] sources) {
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        if (sources == null) {
            return offsets;
        }
        for (SourceProgress source : sources) {
            if (source == null || source.description() == null
                    || !source.description().startsWith("Kafka")) {
                continue;
            }
            offsets.putAll(parseKafkaOffsets(source.endOffset()));
        }
        return offsets;
    }

    /**
     * Spark's Kafka offset JSON, {@code {"topic":{"0":23,"1":42}}}, as a map; empty for null or
     * for text of another shape. Negative offsets (Spark's -1 latest, -2 earliest) are left out.
     */
    static Map<TopicPartition, Long> parseKafkaOffsets(String json) {
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        if (json == null) {
            return offsets;
        }
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (IOException e) {
            return offsets;
        }
        if (root == null || !root.isObject()) {
            return offsets;
        }
        Iterator<Map.Entry<String, JsonNode>> topics = root.fields();
        while (topics.hasNext()) {
            Map.Entry<String, JsonNode> topic = topics.next();
            if (!topic.getValue().isObject()) {
                return new LinkedHashMap<>();
            }
            Iterator<Map.Entry<String, JsonNode>> partitions = topic.getValue().fields();
            while (partitions.hasNext()) {
                Map.Entry<String, JsonNode> partition = partitions.next();
                int id;
                try {
                    id = Integer.parseInt(partition.getKey());
                } catch (NumberFormatException e) {
                    return new LinkedHashMap<>();
                }
                JsonNode offset = partition.getValue();
                if (!offset.isIntegralNumber() || !offset.canConvertToLong()) {
                    return new LinkedHashMap<>();
                }
                if (id >= 0 && offset.asLong() >= 0) {
                    offsets.put(new TopicPartition(topic.getKey(), id), offset.asLong());
                }
            }
        }
        return offsets;
    }
}
