package io.offsetkeeper.bench;

import java.util.Locale;
import java.util.Map;

/** The printed table, the goals, and results.json. */
final class Report {
    static final String OK = "offsetkeeper";
    /** offsetkeeper with ownership off, measured in cold loads only: what ownership costs. */
    static final String OK_NO_OWNERSHIP = "offsetkeeper, ownership off";

    private Report() {}

    static String table(Results r, int[] sizes) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-6s %-14s %9s %9s %9s %9s %13s %8s %8s %8s %8s %15s%n", "P",
                "operation", "B1 ms", "B2 ms", "B3 ms", "F ms", "offsetkeeper", "B1/ok", "B2/ok", "B3/ok", "ok/F",
                "ok min-max ms"));
        for (int size : sizes) {
            for (String op : Bench.OPS) {
                row(b, r, size, op, op, OK);
                if (op.equals("load cold") && r.samples(size, op, OK_NO_OWNERSHIP).length > 0) {
                    row(b, r, size, op, "  ownership off", OK_NO_OWNERSHIP);
                }
            }
        }
        return b.toString();
    }

    /** One line: the peers' medians of {@code op} beside offsetkeeper's as {@code keeper}. */
    private static void row(StringBuilder b, Results r, int size, String op, String label, String keeper) {
        double ok = r.medianMs(size, op, keeper);
        long[] s = r.samples(size, op, keeper);
        String spread = "-";
        if (s.length > 0) {
            long min = Long.MAX_VALUE;
            long max = Long.MIN_VALUE;
            for (long v : s) {
                min = Math.min(min, v);
                max = Math.max(max, v);
            }
            spread = Bench.fmt(min / 1e6) + "-" + Bench.fmt(max / 1e6);
        }
        b.append(String.format(Locale.ROOT, "%-6d %-14s %9s %9s %9s %9s %13s %8s %8s %8s %8s %15s%n",
                size, label, Bench.fmt(r.medianMs(size, op, "B1")),
                Bench.fmt(r.medianMs(size, op, "B2")), Bench.fmt(r.medianMs(size, op, "B3")),
                Bench.fmt(r.medianMs(size, op, "F")),
                Bench.fmt(ok), ratio(r.medianMs(size, op, "B1"), ok),
                ratio(r.medianMs(size, op, "B2"), ok), ratio(r.medianMs(size, op, "B3"), ok),
                ratio(ok, r.medianMs(size, op, "F")),
                spread));
    }

    static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) ? "-" : Bench.fmt(a / b) + "x";
    }

    static String jniAndSoak(Map<String, Double> jni, String soak) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT,
                "JNI: validate of 10,000 entries in one bulk call %.3f ms (median of 200); "
                        + "10,000 single OffsetKeeper.validate calls %.2f ms; empty round trip %.0f ns%n",
                jni.get("validate10kBulkMs"), jni.get("validate10kSingleCallsMs"),
                jni.get("emptyRoundTripNs")));
        if (soak != null) {
            b.append(String.format(Locale.ROOT,
                    "Soak: %.0f load+commit cycles at P=%.0f (%.2f ms/cycle): RSS %.0f -> %.0f kB "
                            + "(%+.2f MB), threads %.0f -> %.0f, fds %.0f -> %.0f%n",
                    Bench.number(soak, "cycles"), Bench.number(soak, "size"),
                    Bench.number(soak, "msPerCycle"), Bench.number(soak, "rssStartKb"),
                    Bench.number(soak, "rssEndKb"), Bench.number(soak, "rssGrowthMb"),
                    Bench.number(soak, "threadsStart"), Bench.number(soak, "threadsEnd"),
                    Bench.number(soak, "fdsStart"), Bench.number(soak, "fdsEnd")));
        }
        return b.toString();
    }

    /**
     * The performance goals: at P=1000 against B1 (the per-partition ZkUtils-style approach), and
     * at every P >= 1000 against B2, B3 and the protocol floor F.
     */
    static String goals(Results r, int[] sizes, Map<String, Double> jni, String soak) {
        StringBuilder b = new StringBuilder("Goals:\n");
        for (String load : new String[] {"load cold", "load warm"}) {
            goal(b, load + " P=1000 >= 20x faster than B1",
                    r.medianMs(1000, load, "B1") / r.medianMs(1000, load, OK), 20, true);
        }
        goal(b, "commit P P=1000 >= 30x faster than B1",
                r.medianMs(1000, "commit P", "B1") / r.medianMs(1000, "commit P", OK), 30, true);
        for (int size : sizes) {
            if (size < 1000) {
                continue;
            }
            for (String op : Bench.OPS) {
                double ok = r.medianMs(size, op, OK);
                boolean load = op.startsWith("load");
                if (!op.equals("commit 1 of P")) {
                    double peerBound = load ? 1.5 : 1;
                    String than = load ? " >= 1.5x faster than " : " no slower than ";
                    for (String peer : new String[] {"B2", "B3"}) {
                        // The floor's own ratio in the same run: a bound F does not reach
                        // asks for more than the requests themselves allow.
                        double peerMs = r.medianMs(size, op, peer);
                        goal(b, op + " P=" + size + than + peer + " (F: "
                                + Bench.fmt(peerMs / r.medianMs(size, op, "F")) + "x)", peerMs / ok,
                                peerBound, true);
                    }
                }
                double floor = r.medianMs(size, op, "F");
                double floorBound = load ? 1.3 : op.equals("commit P") ? 1.15 : 1.5;
                if (op.equals("load cold")) {
                    // A cold load (ownership on) is to stay within 1.3x of F plus what the
                    // ownership writes cost, measured as the same load with ownership off.
                    double off = r.medianMs(size, op, OK_NO_OWNERSHIP);
                    goal(b, op + " P=" + size + " within 1.3x of F + ownership's cost ("
                            + Bench.fmt(ok - off) + " ms): ownership off vs F", off / floor,
                            floorBound, false);
                } else {
                    goal(b, op + " P=" + size + " within " + floorBound + "x of F", ok / floor,
                            floorBound, false);
                }
            }
        }
        for (String op : Bench.OPS) {
            StringBuilder per = new StringBuilder();
            boolean falling = true;
            double previous = Double.MAX_VALUE;
            for (int size : sizes) {
                double us = r.medianMs(size, op, OK) * 1000 / size;
                per.append(String.format(Locale.ROOT, "%s%s", per.length() == 0 ? "" : ", ", Bench.fmt(us)));
                falling &= us < previous;
                previous = us;
            }
            b.append(String.format(Locale.ROOT, "  %-4s %s: offsetkeeper us per partition %s%n",
                    falling ? "PASS" : "MISS", op + " cost per partition falls with P", per));
        }
        goal(b, "validate 10,000 via JNI < 2 ms", jni.get("validate10kBulkMs"), 2, false);
        if (soak != null) {
            goal(b, "RSS growth over the soak < 10 MB", Bench.number(soak, "rssGrowthMb"), 10, false);
            // Steady: no more threads or descriptors after the cycles than before them.
            boolean steady = Bench.number(soak, "threadsEnd") <= Bench.number(soak, "threadsStart")
                    && Bench.number(soak, "fdsEnd") <= Bench.number(soak, "fdsStart");
            b.append(String.format(Locale.ROOT, "  %-4s threads and fds do not grow over the soak: "
                            + "threads %.0f -> %.0f, fds %.0f -> %.0f%n", steady ? "PASS" : "MISS",
                    Bench.number(soak, "threadsStart"), Bench.number(soak, "threadsEnd"),
                    Bench.number(soak, "fdsStart"), Bench.number(soak, "fdsEnd")));
        }
        return b.toString();
    }

    private static void goal(StringBuilder b, String what, double value, double bound, boolean atLeast) {
        boolean pass = atLeast ? value >= bound : value <= bound;
        b.append(String.format(Locale.ROOT, "  %-4s %s: %s%n", Double.isNaN(value) ? "-" : pass ? "PASS" : "MISS",
                what, Bench.fmt(value)));
    }

    private static final String[] JSON_CONTENDERS = {"B1", "B2", "B3", "F", OK, OK_NO_OWNERSHIP};

    static String json(Bench.Machine before, Bench.Machine after, int[] sizes, int runs, int smallRuns, int warmup,
            Results r, Map<String, Double> jni, String soak, double minutes) {
        StringBuilder b = new StringBuilder("{\n");
        b.append(String.format(Locale.ROOT,
                "  \"machine\": {\"cores\": %d, \"cpu\": \"%s\", \"loadAverageBefore\": \"%s\", "
                        + "\"loadAverageAfter\": \"%s\", \"shared\": true},%n",
                before.cores, before.cpu.replace("\"", "'"), before.loadAverage, after.loadAverage));
        b.append(String.format(Locale.ROOT,
                "  \"runs\": %d, \"runsAtSmallSizes\": %d, \"warmupRounds\": %d, \"minutes\": %.2f, \"unit\": \"ms\",%n",
                runs, Math.max(runs, smallRuns), warmup, minutes));
        b.append("  \"results\": [\n");
        boolean first = true;
        for (int size : sizes) {
            for (String op : Bench.OPS) {
                for (String c : JSON_CONTENDERS) {
                    long[] s = r.samples(size, op, c);
                    if (s.length == 0) {
                        continue;
                    }
                    StringBuilder values = new StringBuilder();
                    for (long v : s) {
                        values.append(values.length() == 0 ? "" : ", ")
                                .append(String.format(Locale.ROOT, "%.3f", v / 1e6));
                    }
                    b.append(first ? "" : ",\n").append(String.format(Locale.ROOT,
                            "    {\"P\": %d, \"operation\": \"%s\", \"contender\": \"%s\", "
                                    + "\"medianMs\": %.3f, \"samplesMs\": [%s]}",
                            size, op, c, r.medianMs(size, op, c), values));
                    first = false;
                }
            }
        }
        b.append("\n  ],\n  \"jni\": {");
        first = true;
        for (Map.Entry<String, Double> e : jni.entrySet()) {
            b.append(first ? "" : ", ").append(String.format(Locale.ROOT, "\"%s\": %.4f", e.getKey(), e.getValue()));
            first = false;
        }
        b.append("},\n  \"soak\": ").append(soak == null ? "null" : soak).append("\n}\n");
        return b.toString();
    }
}
