package io.offsetkeeper;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * A job's driver reduced to one load, run by {@link StandaloneJarTest} in a fresh JVM whose
 * class path is the jar, kafka-clients and slf4j-api. Loads twice, to show that a failure is
 * remembered: each attempt builds a keeper (which loads the native library) and loads.
 * Arguments: zookeeper bootstrap group topic.
 */
public final class StandaloneLoad {
    public static void main(String[] args) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", args[1]);
        int failures = 0;
        for (int attempt = 0; attempt < 2; attempt++) {
            try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0]).group(args[2])
                    .kafkaParams(params).build()) {
                List<String> shown = new ArrayList<>();
                for (Map.Entry<TopicPartition, Long> e
                        : keeper.load(Collections.singleton(args[3])).entrySet()) {
                    shown.add(e.getKey() + "=" + e.getValue());
                }
                Collections.sort(shown);
                System.out.println("OFFSETS " + String.join(",", shown));
            } catch (Throwable t) {
                failures++;
                System.out.println("FAILED " + t);
            }
        }
        System.exit(failures);
    }
}
