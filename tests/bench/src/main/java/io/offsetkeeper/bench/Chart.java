package io.offsetkeeper.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import javax.imageio.ImageIO;

/** results as a PNG: one panel per operation, median ms against P, both axes logarithmic. */
final class Chart {
    private static final Color[] COLORS = {new Color(0xd62728), new Color(0xff7f0e),
        new Color(0x2ca02c), new Color(0x7f7f7f), new Color(0x1f77b4)};
    private static final int W = 1000;
    private static final int H = 720;

    private Chart() {}

    static void draw(Results r, int[] sizes, File file) throws IOException {
        System.setProperty("java.awt.headless", "true");
        BufferedImage image = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, W, H);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
        g.drawString("offsetkeeper vs B1 (ZkUtils), B2 (careful JVM), B3 (Curator), F (protocol floor): median ms", 20, 26);
        // legend
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        int lx = 20;
        for (int c = 0; c < Bench.CONTENDERS.length; c++) {
            g.setColor(COLORS[c]);
            g.setStroke(new BasicStroke(3f));
            g.drawLine(lx, 45, lx + 24, 45);
            g.setColor(Color.BLACK);
            g.drawString(Bench.CONTENDERS[c], lx + 30, 50);
            lx += 60 + g.getFontMetrics().stringWidth(Bench.CONTENDERS[c]);
        }
        for (int i = 0; i < Bench.OPS.length; i++) {
            int px = 20 + (i % 2) * (W / 2);
            int py = 65 + (i / 2) * ((H - 65) / 2);
            panel(g, r, sizes, Bench.OPS[i], px, py, W / 2 - 40, (H - 65) / 2 - 20);
        }
        g.dispose();
        ImageIO.write(image, "png", file);
    }

    private static void panel(Graphics2D g, Results r, int[] sizes, String op, int x, int y, int w, int h) {
        int left = x + 55;
        int right = x + w;
        int top = y + 22;
        int bottom = y + h - 30;
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (int size : sizes) {
            for (String c : Bench.CONTENDERS) {
                double v = r.medianMs(size, op, c);
                if (!Double.isNaN(v) && v > 0) {
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
            }
        }
        if (hi == 0) {
            return;
        }
        double yMin = Math.pow(10, Math.floor(Math.log10(lo)));
        double yMax = Math.pow(10, Math.ceil(Math.log10(hi)));
        double xMin = Math.log10(sizes[0]);
        double xMax = Math.log10(sizes[sizes.length - 1]);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
        g.drawString(op, left, y + 14);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        g.setStroke(new BasicStroke(1f));
        for (double d = yMin; d <= yMax * 1.0001; d *= 10) {
            int yy = yPos(d, yMin, yMax, top, bottom);
            g.setColor(new Color(0xdddddd));
            g.drawLine(left, yy, right, yy);
            g.setColor(Color.DARK_GRAY);
            String label = d >= 1 ? String.format("%.0f ms", d) : String.format("%s ms", d);
            g.drawString(label, x, yy + 4);
        }
        for (int size : sizes) {
            int xx = xPos(size, xMin, xMax, left, right);
            g.setColor(new Color(0xdddddd));
            g.drawLine(xx, top, xx, bottom);
            g.setColor(Color.DARK_GRAY);
            String label = "P=" + size;
            g.drawString(label, xx - g.getFontMetrics().stringWidth(label) / 2, bottom + 16);
        }
        g.setColor(Color.GRAY);
        g.drawRect(left, top, right - left, bottom - top);
        for (int c = 0; c < Bench.CONTENDERS.length; c++) {
            g.setColor(COLORS[c]);
            g.setStroke(new BasicStroke(2.5f));
            int px = -1;
            int py = -1;
            for (int size : sizes) {
                double v = r.medianMs(size, op, Bench.CONTENDERS[c]);
                if (Double.isNaN(v) || v <= 0) {
                    continue;
                }
                int xx = xPos(size, xMin, xMax, left, right);
                int yy = yPos(v, yMin, yMax, top, bottom);
                g.fillOval(xx - 4, yy - 4, 8, 8);
                if (px >= 0) {
                    g.drawLine(px, py, xx, yy);
                }
                px = xx;
                py = yy;
            }
        }
    }

    private static int xPos(int size, double xMin, double xMax, int left, int right) {
        double f = xMax == xMin ? 0.5 : (Math.log10(size) - xMin) / (xMax - xMin);
        return left + 12 + (int) Math.round(f * (right - left - 24));
    }

    private static int yPos(double v, double yMin, double yMax, int top, int bottom) {
        double f = (Math.log10(v) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin));
        return bottom - (int) Math.round(f * (bottom - top));
    }
}
