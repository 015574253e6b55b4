package io.offsetkeeper.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Measured nanoseconds per (P, operation, contender). */
final class Results {
    private final Map<String, List<Long>> samples = new LinkedHashMap<>();

    private static String key(int size, String op, String contender) {
        return size + "|" + op + "|" + contender;
    }

    void add(int size, String op, String contender, long nanos) {
        samples.computeIfAbsent(key(size, op, contender), k -> new ArrayList<>()).add(nanos);
    }

    /** The samples in measuring order, or an empty array. */
    long[] samples(int size, String op, String contender) {
        List<Long> list = samples.get(key(size, op, contender));
        return list == null ? new long[0] : list.stream().mapToLong(Long::longValue).toArray();
    }

    /** Median in milliseconds, NaN when nothing was measured. */
    double medianMs(int size, String op, String contender) {
        long[] s = samples(size, op, contender);
        return s.length == 0 ? Double.NaN : median(s) / 1e6;
    }

    static double median(long[] values) {
        long[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
    }
}
