package io.offsetkeeper.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/** Measured nanoseconds per (P, operation, contender), each with the round it was measured in. */
final class Results {
    /** Bootstrap resamples per ratio. */
    static final int RESAMPLES = 4_000;
    /**
     * The bootstrap's seed, the same for every ratio: a report is reproduced exactly from the
     * samples in results.json.
     */
    static final long SEED = 44;

    private final Map<String, List<long[]>> samples = new LinkedHashMap<>();

    private static String key(int size, String op, String contender) {
        return size + "|" + op + "|" + contender;
    }

    void add(int size, String op, String contender, int round, long nanos) {
        samples.computeIfAbsent(key(size, op, contender), k -> new ArrayList<>())
                .add(new long[] {round, nanos});
    }

    /** The samples in measuring order, or an empty array. */
    long[] samples(int size, String op, String contender) {
        List<long[]> list = samples.get(key(size, op, contender));
        return list == null ? new long[0] : list.stream().mapToLong(s -> s[1]).toArray();
    }

    /** The round of each of {@link #samples}. */
    int[] rounds(int size, String op, String contender) {
        List<long[]> list = samples.get(key(size, op, contender));
        return list == null ? new int[0] : list.stream().mapToInt(s -> (int) s[0]).toArray();
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

    /**
     * {@code top}'s time over {@code bottom}'s (in {@code op}; {@code bottomOp} for the bottom
     * one), paired by round: the median of the per-round ratios over the rounds both were
     * measured in, with a 95% percentile bootstrap interval (the rounds drawn with replacement,
     * {@link #RESAMPLES} times). The two ran back to back in each round, so a slow moment of the
     * machine falls on both and mostly cancels in the round's ratio.
     */
    Ratio ratio(int size, String op, String top, String bottomOp, String bottom) {
        long[] a = samples(size, op, top);
        long[] b = samples(size, bottomOp, bottom);
        int[] ra = rounds(size, op, top);
        int[] rb = rounds(size, bottomOp, bottom);
        // The rounds both have, in order (each contender measures a round at most once).
        long[] pa = new long[Math.min(a.length, b.length)];
        long[] pb = new long[pa.length];
        int n = 0;
        for (int i = 0, j = 0; i < a.length && j < b.length; ) {
            if (ra[i] == rb[j]) {
                pa[n] = a[i++];
                pb[n++] = b[j++];
            } else if (ra[i] < rb[j]) {
                i++;
            } else {
                j++;
            }
        }
        if (n == 0) {
            return Ratio.NONE;
        }
        double[] ratios = new double[n];
        for (int i = 0; i < n; i++) {
            ratios[i] = (double) pa[i] / pb[i];
        }
        double point = median(ratios);
        SplittableRandom random = new SplittableRandom(SEED);
        double[] draws = new double[RESAMPLES];
        double[] drawn = new double[n];
        for (int k = 0; k < RESAMPLES; k++) {
            for (int i = 0; i < n; i++) {
                drawn[i] = ratios[random.nextInt(n)];
            }
            draws[k] = median(drawn);
        }
        Arrays.sort(draws);
        return new Ratio(point, draws[(int) (RESAMPLES * 0.025)], draws[(int) (RESAMPLES * 0.975) - 1], n);
    }

    static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
    }

    /**
     * The ratio of a contender's median at {@code topSize} to its median at {@code bottomSize}:
     * measured apart, not in the same rounds, so each size's rounds are drawn on their own.
     */
    Ratio ratioApart(int topSize, int bottomSize, String op, String contender) {
        long[] a = samples(topSize, op, contender);
        long[] b = samples(bottomSize, op, contender);
        if (a.length == 0 || b.length == 0) {
            return Ratio.NONE;
        }
        double point = median(a) / median(b);
        SplittableRandom random = new SplittableRandom(SEED);
        double[] draws = new double[RESAMPLES];
        long[] da = new long[a.length];
        long[] db = new long[b.length];
        for (int k = 0; k < RESAMPLES; k++) {
            for (int i = 0; i < da.length; i++) {
                da[i] = a[random.nextInt(da.length)];
            }
            for (int i = 0; i < db.length; i++) {
                db[i] = b[random.nextInt(db.length)];
            }
            draws[k] = median(da) / median(db);
        }
        Arrays.sort(draws);
        return new Ratio(point, draws[(int) (RESAMPLES * 0.025)], draws[(int) (RESAMPLES * 0.975) - 1],
                Math.min(a.length, b.length));
    }

    /** A ratio of medians, its 95% bootstrap interval, and the number of paired rounds. */
    static final class Ratio {
        static final Ratio NONE = new Ratio(Double.NaN, Double.NaN, Double.NaN, 0);
        final double value;
        final double low;
        final double high;
        final int pairs;

        Ratio(double value, double low, double high, int pairs) {
            this.value = value;
            this.low = low;
            this.high = high;
            this.pairs = pairs;
        }

        Ratio times(double factor) {
            return new Ratio(value * factor, low * factor, high * factor, pairs);
        }

        boolean isNaN() {
            return Double.isNaN(value);
        }

        /** "1.52x [1.41-1.60]", or "-". */
        String text() {
            return isNaN() ? "-" : Bench.fmt(value) + "x [" + Bench.fmt(low) + "-" + Bench.fmt(high) + "]";
        }
    }
}
