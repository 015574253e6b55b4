package io.offsetkeeper;

import static org.junit.Assert.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Arrays;
import java.util.Collections;
import org.junit.Test;

/**
 * The JSON of {@link LoadReport#startingOffsetsJson()}, built without a JSON library (the core
 * API needs none): read back by the Jackson that Spark ships, for names that need escaping too.
 */
public class StartingOffsetsJsonTest {
    private static PartitionReport row(String topic, int partition, long chosen) {
        return new PartitionReport(topic, partition, chosen, String.valueOf(chosen), 0, chosen,
                chosen, Action.KEPT, 0, null, null, null);
    }

    @Test
    public void groupsByTopicAndEscapesNames() throws Exception {
        String odd = "quote\" back\\slash \n tab\t \u0001";
        LoadReport report = new LoadReport(Arrays.asList(row("orders", 0, 23), row(odd, 0, 5),
                row("orders", 1, 42)), Collections.<StalePartition>emptyList());
        String json = report.startingOffsetsJson();
        assertEquals("{\"orders\":{\"0\":23,\"1\":42},"
                + "\"quote\\\" back\\\\slash \\u000a tab\\u0009 \\u0001\":{\"0\":5}}", json);
        JsonNode tree = new ObjectMapper().readTree(json);
        assertEquals(23, tree.get("orders").get("0").asLong());
        assertEquals(42, tree.get("orders").get("1").asLong());
        assertEquals(5, tree.get(odd).get("0").asLong());
        assertEquals("{}", new LoadReport(Collections.<PartitionReport>emptyList(),
                Collections.<StalePartition>emptyList()).startingOffsetsJson());
    }
}
