package io.offsetkeeper;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads {@code liboffsetkeeper_jni} once per JVM (per class loader): from the file named by the
 * system property {@value #OVERRIDE_PROPERTY} if set, else from the jar resource
 * {@code native/<os>-<arch>/<library>}, copied to a temporary file first because the dynamic
 * linker cannot read from inside a jar.
 */
final class NativeLibrary {
    /** System property naming a library file on disk to load instead of the jar's. */
    static final String OVERRIDE_PROPERTY = "offsetkeeper.native.library";

    private static final String NAME = "offsetkeeper_jni";

    private static volatile boolean loaded;
    /** The first failure, thrown again on every later call: loading is not retried. */
    private static UnsatisfiedLinkError failure;

    private NativeLibrary() {}

    /**
     * Loads the library unless it is loaded already.
     *
     * @throws UnsatisfiedLinkError naming what was looked for, also on every call after a failure
     */
    static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (loaded) {
                return;
            }
            if (failure != null) {
                UnsatisfiedLinkError again = new UnsatisfiedLinkError(
                        failure.getMessage() + " (failed earlier in this JVM; not retried)");
                again.initCause(failure);
                throw again;
            }
            try {
                String override = System.getProperty(OVERRIDE_PROPERTY);
                if (override != null && !override.isEmpty()) {
                    loadFile(override);
                } else {
                    loadResource();
                }
                loaded = true;
            } catch (UnsatisfiedLinkError e) {
                failure = e;
                throw e;
            }
        }
    }

    private static void loadFile(String path) {
        File file = new File(path);
        if (!file.isFile()) {
            throw new UnsatisfiedLinkError("-D" + OVERRIDE_PROPERTY + "=" + path
                    + " does not name a file; point it at liboffsetkeeper_jni.so or unset it"
                    + " to use the library inside the offsetkeeper jar");
        }
        System.load(file.getAbsolutePath());
    }

    private static void loadResource() {
        String osName = System.getProperty("os.name", "");
        String osArch = System.getProperty("os.arch", "");
        String fileName = System.mapLibraryName(NAME);
        String resource = "native/" + platform(osName, osArch) + "/" + fileName;
        InputStream in = NativeLibrary.class.getClassLoader().getResourceAsStream(resource);
        if (in == null) {
            throw new UnsatisfiedLinkError("offsetkeeper has no native library for os.name="
                    + osName + ", os.arch=" + osArch + ": resource " + resource
                    + " is not on the class path (the offsetkeeper jar carries"
                    + " native/linux-x86_64/liboffsetkeeper_jni.so and"
                    + " native/linux-aarch64/liboffsetkeeper_jni.so, for glibc 2.17 and later);"
                    + " build one for this"
                    + " platform and set -D" + OVERRIDE_PROPERTY + "=/path/to/" + fileName);
        }
        Path extracted = null;
        try (InputStream resourceStream = in) {
            // A unique name per load, so that two class loaders or two JVMs never share a file.
            int dot = fileName.lastIndexOf('.');
            extracted = Files.createTempFile(fileName.substring(0, dot) + "-", fileName.substring(dot));
            extracted.toFile().deleteOnExit();
            Files.copy(resourceStream, extracted, StandardCopyOption.REPLACE_EXISTING);
            System.load(extracted.toAbsolutePath().toString());
        } catch (IOException | UnsatisfiedLinkError e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("could not load " + resource
                    + (extracted == null ? "" : " extracted to " + extracted) + ": " + e
                    + " (if java.io.tmpdir is mounted noexec, set -Djava.io.tmpdir or -D"
                    + OVERRIDE_PROPERTY + ")");
            error.initCause(e);
            throw error;
        }
    }

    /** {@code linux-x86_64} and the like: the folder under {@code native/} for this platform. */
    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) {
            os = "linux";
        } else if (os.startsWith("mac") || os.startsWith("darwin")) {
            os = "osx";
        } else if (os.startsWith("windows")) {
            os = "windows";
        }
        String arch = osArch.toLowerCase(Locale.ROOT);
        if (arch.equals("amd64") || arch.equals("x86_64")) {
            arch = "x86_64";
        } else if (arch.equals("arm64")) {
            arch = "aarch64";
        }
        return (os + "-" + arch).replaceAll("[^a-z0-9_.-]", "");
    }
}
