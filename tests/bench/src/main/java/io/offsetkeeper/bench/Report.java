package io.offsetkeeper.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The printed table, the goals with their verdicts, and results.json. */
final class Report {
    static final String OK = "offsetkeeper";
    /** offsetkeeper with ownership off, measured in cold loads only: what ownership costs. */
    static final String OK_NO_OWNERSHIP = "offsetkeeper, ownership off";
    /** offsetkeeper's commits of Spark's {@code OffsetRange[]} (SparkOffsets.commit), in commits only. */
    static final String OK_SPARK = "offsetkeeper, OffsetRange[]";
    /** offsetkeeper with offsetkeeper.store=kafka, and its two variants as above. */
    static final String OK_KAFKA = "offsetkeeper on Kafka";
    static final String OK_KAFKA_NO_OWNERSHIP = "offsetkeeper on Kafka, ownership off";
    static final String OK_KAFKA_SPARK = "offsetkeeper on Kafka, OffsetRange[]";
    /**
     * Where the floor itself does not clearly meet a goal against a peer, offsetkeeper is judged
     * against the floor instead: within this factor of F.
     */
    static final double FLOOR_FALLBACK = 1.1;

    static final String MET = "met";
    static final String MISSED = "missed";
    static final String NOISE = "within noise";

    private Report() {}

    /**
     * One store's table: its peers, its protocol floor and offsetkeeper's three contenders on
     * it. The goals are the same for both stores.
     */
    static final class Section {
        final String title;
        final String[] peers;
        final String floor;
        final String ok;
        final String okNoOwnership;
        final String okSpark;
        /** The floor told which partition changed (ZooKeeper only), or null. */
        final String told;

        Section(String title, String[] peers, String floor, String ok, String okNoOwnership, String okSpark,
                String told) {
            this.title = title;
            this.peers = peers;
            this.floor = floor;
            this.ok = ok;
            this.okNoOwnership = okNoOwnership;
            this.okSpark = okSpark;
            this.told = told;
        }

        String[] contenders() {
            List<String> all = new ArrayList<>(Arrays.asList(peers));
            all.add(floor);
            if (told != null) {
                all.add(told);
            }
            all.add(ok);
            all.add(okNoOwnership);
            all.add(okSpark);
            return all.toArray(new String[0]);
        }
    }

    static final Section ZOOKEEPER = new Section("Offsets in ZooKeeper", new String[] {"B1", "B2", "B3"}, "F",
            OK, OK_NO_OWNERSHIP, OK_SPARK, FloorProcess.TOLD);
    static final Section KAFKA = new Section("Offsets in Kafka's group store (offsetkeeper.store=kafka)",
            new String[] {KafkaStorePeer.NAME}, FloorProcess.KAFKA_FLOOR, OK_KAFKA, OK_KAFKA_NO_OWNERSHIP,
            OK_KAFKA_SPARK, null);
    static final Section[] SECTIONS = {ZOOKEEPER, KAFKA};

    /** One goal: a ratio of two contenders' medians against a bound, and its verdict. */
    static final class Goal {
        final int size;
        final String op;
        /** The row's offsetkeeper contender and the table column the goal is read in. */
        final String keeper;
        final String column;
        final String what;
        final Results.Ratio ratio;
        final double bound;
        final boolean atLeast;
        final String verdict;
        /** Set when the goal was judged against F instead of the peer ({@link #FLOOR_FALLBACK}). */
        final String note;

        Goal(int size, String op, String keeper, String column, String what, Results.Ratio ratio,
                double bound, boolean atLeast, String note) {
            this.size = size;
            this.op = op;
            this.keeper = keeper;
            this.column = column;
            this.what = what;
            this.ratio = ratio;
            this.bound = bound;
            this.atLeast = atLeast;
            this.verdict = verdict(ratio, bound, atLeast);
            this.note = note;
        }

        /** One character for the table: + met, ~ within noise, ! missed; f when judged against F. */
        String mark() {
            String m = verdict == null ? "" : verdict.equals(MET) ? "+" : verdict.equals(MISSED) ? "!" : "~";
            return m + (note != null ? "f" : "");
        }
    }

    /**
     * Met when the whole 95% interval is on the goal's side of the bound, missed when the whole
     * interval is on the other side, within noise otherwise; null without samples.
     */
    static String verdict(Results.Ratio r, double bound, boolean atLeast) {
        if (r.isNaN()) {
            return null;
        }
        if (atLeast) {
            return r.low >= bound ? MET : r.high < bound ? MISSED : NOISE;
        }
        return r.high <= bound ? MET : r.low > bound ? MISSED : NOISE;
    }

    /**
     * The performance goals: at P=1000 against B1 (the per-partition ZkUtils-style approach), and
     * at every P >= 1000 against B2, B3 and the protocol floor F. A goal against a peer that F
     * itself does not clearly meet (its own ratio within noise of the bound, or short of it)
     * asks for more than the requests allow: offsetkeeper is then judged as within 1.1x of F.
     */
    static List<Goal> evaluate(Results r, int[] sizes) {
        List<Goal> goals = new ArrayList<>();
        for (Section section : SECTIONS) {
            goals.addAll(evaluate(r, sizes, section));
        }
        return goals;
    }

    static List<Goal> evaluate(Results r, int[] sizes, Section s) {
        List<Goal> goals = new ArrayList<>();
        if (Arrays.asList(s.peers).contains("B1") && r.samples(1000, "load warm", s.ok).length > 0) {
            for (String load : new String[] {"load cold", "load warm"}) {
                goals.add(new Goal(1000, load, s.ok, "B1", load + " P=1000 >= 20x faster than B1",
                        r.ratio(1000, load, "B1", load, s.ok), 20, true, null));
            }
            goals.add(new Goal(1000, "commit P", s.ok, "B1", "commit P P=1000 >= 30x faster than B1",
                    r.ratio(1000, "commit P", "B1", "commit P", s.ok), 30, true, null));
        }
        String f = s.floor;
        for (int size : sizes) {
            if (size < 1000 || r.samples(size, "load warm", s.ok).length == 0) {
                continue;
            }
            for (String op : Bench.OPS) {
                boolean load = op.startsWith("load");
                if (!op.equals("commit 1 of P")) {
                    double peerBound = load ? 1.5 : 1;
                    String than = load ? " >= 1.5x faster than " : " no slower than ";
                    for (String peer : s.peers) {
                        if (peer.equals("B1")) {
                            continue;
                        }
                        Results.Ratio ok = r.ratio(size, op, peer, op, s.ok);
                        Results.Ratio floor = r.ratio(size, op, peer, op, f);
                        String what = op + " P=" + size + than + peer;
                        if (ok.isNaN() || floor.isNaN() || MET.equals(verdict(floor, peerBound, true))) {
                            goals.add(new Goal(size, op, s.ok, peer, what + " (" + f + ": " + floor.text() + ")",
                                    ok, peerBound, true, null));
                        } else {
                            goals.add(new Goal(size, op, s.ok, peer, what + ": " + f + " itself " + floor.text()
                                    + ", so judged as within " + FLOOR_FALLBACK + "x of " + f,
                                    r.ratio(size, op, s.ok, op, f), FLOOR_FALLBACK, false,
                                    f + " " + floor.text()));
                        }
                    }
                }
                double floorBound = load ? 1.3 : op.equals("commit P") ? 1.15 : 1.5;
                if (op.equals("load cold")) {
                    // A cold load (ownership on) is to stay within 1.3x of the floor plus what the
                    // ownership costs, measured as the same load with ownership off.
                    double cost = r.medianMs(size, op, s.ok) - r.medianMs(size, op, s.okNoOwnership);
                    goals.add(new Goal(size, op, s.okNoOwnership, f, op + " P=" + size
                            + " within 1.3x of " + f + " + ownership's cost (" + Bench.fmt(cost)
                            + " ms): ownership off vs " + f, r.ratio(size, op, s.okNoOwnership, op, f),
                            floorBound, false, null));
                } else {
                    goals.add(new Goal(size, op, s.ok, f, op + " P=" + size + " within " + floorBound
                            + "x of " + f + (op.equals("commit 1 of P") ? " (" + f + " handed all P entries)" : ""),
                            r.ratio(size, op, s.ok, op, f), floorBound, false, null));
                }
            }
        }
        return goals;
    }

    static String table(Results r, int[] sizes) {
        StringBuilder b = new StringBuilder();
        for (Section section : SECTIONS) {
            b.append(table(r, sizes, section));
        }
        return b.toString();
    }

    /** The rows of one store's table, each a label, the contender and the floor it is read against. */
    private static List<String[]> rows(Results r, int size, String op, Section s) {
        List<String[]> rows = new ArrayList<>();
        if (r.samples(size, op, s.ok).length == 0) {
            return rows;
        }
        rows.add(new String[] {op, s.ok, s.floor, "peers"});
        if (op.equals("load cold") && r.samples(size, op, s.okNoOwnership).length > 0) {
            rows.add(new String[] {op + ", ownership off", s.okNoOwnership, s.floor, "peers"});
        }
        if (r.samples(size, op, s.okSpark).length > 0) {
            rows.add(new String[] {op + ", `OffsetRange[]`", s.okSpark, s.floor, "peers"});
        }
        if (s.told != null && r.samples(size, op, s.told).length > 0) {
            rows.add(new String[] {op + ", " + s.floor + " told which", s.ok, s.told, null});
        }
        return rows;
    }

    static String table(Results r, int[] sizes, Section s) {
        List<Goal> goals = evaluate(r, sizes, s);
        StringBuilder body = new StringBuilder();
        StringBuilder format = new StringBuilder("%-6s %-34s");
        List<Object> header = new ArrayList<>(Arrays.asList("P", "operation"));
        for (String peer : s.peers) {
            format.append(" %8s");
            header.add(peer + " ms");
        }
        format.append(" %8s %12s");
        header.add(s.floor + " ms");
        header.add("offsetkeeper");
        for (String peer : s.peers) {
            format.append(" %18s");
            header.add(peer + "/ok [95%]");
        }
        format.append(" %18s %13s%n");
        header.add("ok/" + s.floor + " [95%]");
        header.add("ok min-max");
        for (int size : sizes) {
            for (String op : Bench.OPS) {
                for (String[] row : rows(r, size, op, s)) {
                    body.append(String.format(Locale.ROOT, format.toString(), cells(r, goals, size, op, row, s, false)));
                }
            }
        }
        if (body.length() == 0) {
            return "";
        }
        return s.title + "\n" + String.format(Locale.ROOT, format.toString(), header.toArray()) + body
                + "Ratios: the median of the per-round ratios (the two ran back to back in each round), with "
                + "a 95% bootstrap interval over those rounds. Goals: + met, ~ within noise, ! missed; f: judged "
                + "as within " + FLOOR_FALLBACK + "x of " + s.floor + " (" + s.floor + " itself does not clearly meet it).\n"
                + s.floor + " (commits): handed all P entries, compares them with what it last wrote, writes the "
                + "changed ones" + (s.told != null ? "; \"" + s.floor + " told which\": " + s.floor
                + " told the changed partition (the old floor)" : "") + ".\n"
                + "OffsetRange[]: offsetkeeper's SparkOffsets.commit(keeper, ranges), what a Spark job's "
                + "foreachRDD calls; the row above it is commit(Map).\n\n";
    }

    /** The same tables in Markdown (build/bench/table.md), for docs/performance.md. */
    static String markdown(Results r, int[] sizes) {
        StringBuilder b = new StringBuilder();
        for (Section s : SECTIONS) {
            String text = table(r, sizes, s);
            if (text.isEmpty()) {
                continue;
            }
            List<Goal> goals = evaluate(r, sizes, s);
            StringBuilder head = new StringBuilder("| P | operation");
            StringBuilder rule = new StringBuilder("|---:|---");
            for (String peer : s.peers) {
                head.append(" | ").append(peer);
                rule.append("|---:");
            }
            head.append(" | ").append(s.floor).append(" | offsetkeeper");
            rule.append("|---:|---:");
            for (String peer : s.peers) {
                head.append(" | ").append(peer).append(" / ok");
                rule.append("|---:");
            }
            head.append(" | ok / ").append(s.floor).append(" | ok min-max |\n");
            rule.append("|---:|---:|\n");
            b.append("**").append(s.title).append("**\n\n").append(head).append(rule);
            int bold = 2 + s.peers.length + 1;
            for (int size : sizes) {
                for (String op : Bench.OPS) {
                    for (String[] row : rows(r, size, op, s)) {
                        Object[] cells = cells(r, goals, size, op, row, s, true);
                        b.append("|");
                        for (int i = 0; i < cells.length; i++) {
                            String c = cells[i].toString();
                            c = c.isEmpty() ? "" : i == bold ? "**" + c + "**" : c;
                            b.append(' ').append(c.replace("~", "\\~")).append(" |");
                        }
                        b.append('\n');
                    }
                }
            }
            b.append('\n').append(text.substring(text.indexOf("Ratios:")));
        }
        return b.toString();
    }

    /**
     * One line's cells: P, label, the peers' medians, the floor's and offsetkeeper's, the ratios
     * to the peers and to the floor, offsetkeeper's spread. {@code row}: label, contender, floor,
     * and "peers" when the peers' columns apply.
     */
    private static Object[] cells(Results r, List<Goal> goals, int size, String op, String[] row, Section s,
            boolean markdown) {
        String label = markdown ? row[0] : (row[0].equals(op) ? op : "  " + row[0].substring(op.length() + 2))
                .replace("`", "");
        String keeper = row[1];
        String floor = row[2];
        boolean peers = row[3] != null;
        List<Object> cells = new ArrayList<>();
        cells.add(size);
        cells.add(label);
        for (String peer : s.peers) {
            cells.add(peers ? Bench.fmt(r.medianMs(size, op, peer)) : "");
        }
        cells.add(Bench.fmt(r.medianMs(size, op, floor)));
        cells.add(Bench.fmt(r.medianMs(size, op, keeper)));
        for (String peer : s.peers) {
            cells.add(peers ? cell(r.ratio(size, op, peer, op, keeper), mark(goals, size, op, keeper, peer)) : "");
        }
        cells.add(cell(r.ratio(size, op, keeper, op, floor),
                floor.equals(s.floor) ? mark(goals, size, op, keeper, s.floor) : ""));
        long[] samples = r.samples(size, op, keeper);
        String spread = "-";
        if (samples.length > 0) {
            long min = Long.MAX_VALUE;
            long max = Long.MIN_VALUE;
            for (long v : samples) {
                min = Math.min(min, v);
                max = Math.max(max, v);
            }
            spread = Bench.fmt(min / 1e6) + "-" + Bench.fmt(max / 1e6);
        }
        cells.add(spread);
        return cells.toArray();
    }

    private static String cell(Results.Ratio ratio, String mark) {
        if (ratio.isNaN()) {
            return "-";
        }
        return Bench.fmt(ratio.value) + "x " + Bench.fmt(ratio.low) + "-" + Bench.fmt(ratio.high) + mark;
    }

    private static String mark(List<Goal> goals, int size, String op, String keeper, String column) {
        for (Goal g : goals) {
            if (g.size == size && g.op.equals(op) && g.keeper.equals(keeper) && g.column.equals(column)) {
                return g.mark();
            }
        }
        return "";
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
     * The Goals block: each ratio goal with its median, its 95% interval and its verdict, then
     * the goals without an interval (met or missed on the run's values).
     */
    static String goals(Results r, int[] sizes, Map<String, Double> jni, String soak) {
        StringBuilder b = new StringBuilder("Goals (median of the per-round ratios [95% bootstrap interval "
                + "over the paired rounds]; met / within noise / missed):\n");
        int[] counts = new int[3];
        for (Goal g : evaluate(r, sizes)) {
            if (g.verdict == null) {
                b.append(String.format(Locale.ROOT, "  %-12s %s: not measured%n", "-", g.what));
                continue;
            }
            counts[g.verdict.equals(MET) ? 0 : g.verdict.equals(NOISE) ? 1 : 2]++;
            b.append(String.format(Locale.ROOT, "  %-12s %s: %s (%d rounds)%n", g.verdict, g.what,
                    g.ratio.text(), g.ratio.pairs));
        }
        for (String op : Bench.OPS) {
            // Each step to the next P: the ratio of the costs per partition, below 1, with its
            // interval (the sizes ran apart: each size's rounds drawn on their own).
            if (Double.isNaN(r.medianMs(sizes[0], op, OK))) {
                continue; // a run of the Kafka store only
            }
            StringBuilder per = new StringBuilder();
            StringBuilder steps = new StringBuilder();
            String verdict = MET;
            for (int i = 0; i < sizes.length; i++) {
                double us = r.medianMs(sizes[i], op, OK) * 1000 / sizes[i];
                per.append(String.format(Locale.ROOT, "%s%s", per.length() == 0 ? "" : ", ", Bench.fmt(us)));
                if (i > 0) {
                    Results.Ratio step = r.ratioApart(sizes[i], sizes[i - 1], op, OK)
                            .times((double) sizes[i - 1] / sizes[i]);
                    String v = verdict(step, 1, false);
                    if (MISSED.equals(v) || (NOISE.equals(v) && MET.equals(verdict))) {
                        verdict = v;
                    }
                    steps.append(steps.length() == 0 ? "" : ", ").append(step.text());
                }
            }
            counts[verdict.equals(MET) ? 0 : verdict.equals(NOISE) ? 1 : 2]++;
            b.append(String.format(Locale.ROOT, "  %-12s %s: offsetkeeper us per partition %s; "
                    + "each step's ratio %s%n", verdict, op + " cost per partition falls with P", per, steps));
        }
        plain(b, counts, "validate 10,000 via JNI < 2 ms", jni.get("validate10kBulkMs"), 2);
        if (soak != null) {
            plain(b, counts, "RSS growth over the soak < 10 MB", Bench.number(soak, "rssGrowthMb"), 10);
            // Steady: no more threads or descriptors after the cycles than before them.
            boolean steady = Bench.number(soak, "threadsEnd") <= Bench.number(soak, "threadsStart")
                    && Bench.number(soak, "fdsEnd") <= Bench.number(soak, "fdsStart");
            counts[steady ? 0 : 2]++;
            b.append(String.format(Locale.ROOT, "  %-12s threads and fds do not grow over the soak: "
                            + "threads %.0f -> %.0f, fds %.0f -> %.0f%n", steady ? MET : MISSED,
                    Bench.number(soak, "threadsStart"), Bench.number(soak, "threadsEnd"),
                    Bench.number(soak, "fdsStart"), Bench.number(soak, "fdsEnd")));
        }
        b.append(String.format(Locale.ROOT, "  %d goals: %d met, %d within noise, %d missed%n",
                counts[0] + counts[1] + counts[2], counts[0], counts[1], counts[2]));
        return b.toString();
    }

    /** A goal read off one value (no rounds to draw from): met or missed. */
    private static void plain(StringBuilder b, int[] counts, String what, double value, double bound) {
        boolean met = value <= bound;
        if (!Double.isNaN(value)) {
            counts[met ? 0 : 2]++;
        }
        b.append(String.format(Locale.ROOT, "  %-12s %s: %s%n", Double.isNaN(value) ? "-" : met ? MET : MISSED,
                what, Bench.fmt(value)));
    }


    /** Every contender of every section, for results.json. */
    private static List<String> contenders() {
        List<String> all = new ArrayList<>();
        for (Section s : SECTIONS) {
            all.addAll(Arrays.asList(s.contenders()));
        }
        return all;
    }

    static String json(Bench.Machine before, Bench.Machine after, int[] sizes, int runs, int smallRuns, int b1Runs,
            int warmup, Results r, Map<String, Double> jni, String soak, double minutes) {
        StringBuilder b = new StringBuilder("{\n");
        b.append(String.format(Locale.ROOT,
                "  \"machine\": {\"cores\": %d, \"cpu\": \"%s\", \"loadAverageBefore\": \"%s\", "
                        + "\"loadAverageAfter\": \"%s\", \"shared\": true},%n",
                before.cores, before.cpu.replace("\"", "'"), before.loadAverage, after.loadAverage));
        b.append(String.format(Locale.ROOT,
                "  \"runs\": %d, \"runsAtSmallSizes\": %d, \"b1Runs\": %d, \"warmupRounds\": %d, \"minutes\": %.2f, "
                        + "\"unit\": \"ms\",%n", runs, Math.max(runs, smallRuns), b1Runs, warmup, minutes));
        b.append(String.format(Locale.ROOT,
                "  \"bootstrap\": {\"resamples\": %d, \"seed\": %d, \"interval\": 0.95, \"pairedBy\": \"round\", "
                        + "\"statistic\": \"median of the per-round ratios\"},%n", Results.RESAMPLES, Results.SEED));
        b.append("  \"results\": [\n");
        boolean first = true;
        for (int size : sizes) {
            for (String op : Bench.OPS) {
                for (String c : contenders()) {
                    long[] s = r.samples(size, op, c);
                    if (s.length == 0) {
                        continue;
                    }
                    StringBuilder values = new StringBuilder();
                    // To the nanosecond: the report is reproduced exactly from these samples.
                    for (long v : s) {
                        values.append(values.length() == 0 ? "" : ", ")
                                .append(String.format(Locale.ROOT, "%.6f", v / 1e6));
                    }
                    StringBuilder rounds = new StringBuilder();
                    for (int round : r.rounds(size, op, c)) {
                        rounds.append(rounds.length() == 0 ? "" : ", ").append(round);
                    }
                    b.append(first ? "" : ",\n").append(String.format(Locale.ROOT,
                            "    {\"P\": %d, \"operation\": \"%s\", \"contender\": \"%s\", "
                                    + "\"medianMs\": %.3f, \"samplesMs\": [%s], \"rounds\": [%s]}",
                            size, op, c, r.medianMs(size, op, c), values, rounds));
                    first = false;
                }
            }
        }
        b.append("\n  ],\n  \"goals\": [\n");
        first = true;
        for (Goal g : evaluate(r, sizes)) {
            b.append(first ? "" : ",\n").append(String.format(Locale.ROOT,
                    "    {\"P\": %d, \"operation\": \"%s\", \"goal\": \"%s\", \"ratio\": %s, \"low\": %s, "
                            + "\"high\": %s, \"rounds\": %d, \"bound\": %s, \"atLeast\": %s, \"verdict\": %s, "
                            + "\"judgedAgainstF\": %s}",
                    g.size, g.op, g.what.replace("\"", "'"), num(g.ratio.value), num(g.ratio.low),
                    num(g.ratio.high), g.ratio.pairs, num(g.bound), g.atLeast,
                    g.verdict == null ? "null" : "\"" + g.verdict + "\"", g.note != null));
            first = false;
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

    private static String num(double v) {
        return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.4f", v);
    }
}
