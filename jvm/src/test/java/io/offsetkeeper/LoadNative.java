package io.offsetkeeper;

import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the native library in a fresh JVM, for {@link NativeExtractionTest}: one
 * {@code validate} call, or with the argument {@code twoLoaders} one in each of two class
 * loaders. Prints {@code LOADED <action>} per call, or {@code FAILED <error>} and exits 2.
 */
public final class LoadNative {
    public static void main(String[] args) throws Exception {
        try {
            if (args.length > 0 && args[0].equals("twoLoaders")) {
                List<URL> urls = new ArrayList<>();
                for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                    urls.add(new File(entry).toURI().toURL());
                }
                for (int i = 0; i < 2; i++) {
                    URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), null);
                    Class<?> keeper = loader.loadClass(OffsetKeeper.class.getName());
                    Method validate = keeper.getMethod("validate", Long.class, long.class,
                            long.class, loader.loadClass(OnMissing.class.getName()),
                            loader.loadClass(OnBelowRange.class.getName()),
                            loader.loadClass(OnAboveRange.class.getName()));
                    Object decision = validate.invoke(null, 1L, 0L, 2L, null, null, null);
                    System.out.println("LOADED " + decision.getClass().getMethod("action").invoke(decision));
                }
            } else {
                System.out.println("LOADED " + OffsetKeeper.validate(1L, 0, 2, null, null, null).action());
            }
        } catch (Throwable t) {
            System.out.println("FAILED " + t);
            System.exit(2);
        }
    }
}
