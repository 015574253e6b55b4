package io.offsetkeeper;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;
import java.util.Set;

/**
 * Loads {@code liboffsetkeeper_jni} once per JVM (per class loader): from the file named by the
 * system property {@value #OVERRIDE_PROPERTY} if set, else from the jar resource
 * {@code native/<os>-<arch>/<library>}, copied to disk first because the dynamic linker cannot
 * read from inside a jar.
 *
 * <p>The copy goes to one directory per user, {@code <java.io.tmpdir>/offsetkeeper-<user>}
 * (created {@code rwx------}; refused when it is a link, is owned by another user, or is
 * writable by group or others), under a name that carries the library's version and the start
 * of its SHA-256, e.g. {@code liboffsetkeeper_jni-0.1.0-1a2b3c4d5e6f7a8b.so}. A later JVM reuses
 * that file after checking its size and hash; a partial or altered file is replaced. Files are
 * written under a temporary name and renamed into place, so a JVM killed mid-write leaves no
 * half file under the final name. So killed JVMs leave at most one copy per library.
 */
final class NativeLibrary {
    /** System property naming a library file on disk to load instead of the jar's. */
    static final String OVERRIDE_PROPERTY = "offsetkeeper.native.library";

    private static final String NAME = "offsetkeeper_jni";
    /** Hex digits of the SHA-256 in the extracted file's name. */
    private static final int HASH_DIGITS = 16;
    /** Temporary files older than this in the shared directory are from killed JVMs. */
    private static final long STALE_TEMP_MILLIS = 3_600_000;

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
        byte[] library;
        try (InputStream resourceStream = in) {
            library = readAll(resourceStream);
        } catch (IOException e) {
            throw linkError("could not read resource " + resource + ": " + e, e);
        }
        String hash = sha256(library);
        int dot = fileName.lastIndexOf('.');
        String extractedName = fileName.substring(0, dot) + "-" + version() + "-"
                + hash.substring(0, HASH_DIGITS) + fileName.substring(dot);
        String tmpdir = System.getProperty("java.io.tmpdir", "");
        Path extracted = null;
        try {
            Path dir = sharedDirectory(tmpdir);
            extracted = dir.resolve(extractedName);
            if (!intact(extracted, library.length, hash)) {
                extract(dir, extracted, library);
            }
        } catch (IOException e) {
            String why = e instanceof UnsafeDirectoryException ? e.getMessage()
                    : e + "; java.io.tmpdir=" + tmpdir + " is read-only or not writable by this"
                    + " user (offsetkeeper copies its native library there)";
            throw linkError("could not extract " + resource + " to "
                    + (extracted == null ? "java.io.tmpdir" : extracted.toString()) + ": " + why
                    + ": set -Djava.io.tmpdir to a writable directory, or -D" + OVERRIDE_PROPERTY
                    + "=/path/to/" + fileName + " to load a library on disk", e);
        }
        try {
            loadShared(extracted, library);
        } catch (IOException | UnsatisfiedLinkError e) {
            throw linkError("could not load " + resource + " extracted to " + extracted + ": " + e
                    + " (if java.io.tmpdir is mounted noexec, set -Djava.io.tmpdir or -D"
                    + OVERRIDE_PROPERTY + ")", e);
        }
    }

    /**
     * Loads the shared copy. A library file may be loaded by one class loader only, so when
     * another class loader of this JVM holds it already, this one loads a private copy, which
     * is deleted at once (the loaded library stays mapped).
     */
    private static void loadShared(Path extracted, byte[] library) throws IOException {
        try {
            System.load(extracted.toAbsolutePath().toString());
        } catch (UnsatisfiedLinkError e) {
            if (String.valueOf(e.getMessage()).indexOf("another classloader") < 0) {
                throw e;
            }
            Path copy = Files.createTempFile(extracted.getParent(),
                    extracted.getFileName() + ".", ".tmp");
            try {
                Files.write(copy, library);
                System.load(copy.toAbsolutePath().toString());
            } finally {
                Files.deleteIfExists(copy);
            }
        }
    }

    /**
     * {@code <tmpdir>/offsetkeeper-<user>}, created owner-only when missing.
     *
     * @throws IOException when it cannot be created, or is not safe to use
     */
    private static Path sharedDirectory(String tmpdir) throws IOException {
        Path base = Paths.get(tmpdir).toAbsolutePath();
        String user = System.getProperty("user.name", "").replaceAll("[^A-Za-z0-9._-]", "_");
        Path dir = base.resolve("offsetkeeper-" + user);
        Set<PosixFilePermission> ownerOnly = PosixFilePermissions.fromString("rwx------");
        PosixFileAttributes attributes;
        try {
            try {
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(ownerOnly));
            } catch (FileAlreadyExistsException e) {
                // made by an earlier JVM (or by someone else: checked below)
            }
            attributes = Files.readAttributes(dir, PosixFileAttributes.class,
                    LinkOption.NOFOLLOW_LINKS);
        } catch (UnsupportedOperationException e) {
            Files.createDirectories(dir); // no POSIX permissions on this file system
            return dir;
        }
        if (!attributes.isDirectory()) {
            throw new UnsafeDirectoryException(dir + " is not a directory (a link or a file); remove it");
        }
        UserPrincipal me = currentUser();
        if (me != null && !attributes.owner().equals(me)) {
            throw new UnsafeDirectoryException(dir + " is owned by " + attributes.owner().getName()
                    + ", not by this user (" + me.getName() + "); refusing to load code from it");
        }
        Set<PosixFilePermission> permissions = attributes.permissions();
        if (permissions.contains(PosixFilePermission.GROUP_WRITE)
                || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new UnsafeDirectoryException(dir + " is writable by group or others ("
                    + PosixFilePermissions.toString(permissions)
                    + "); refusing to load code from it: remove it or chmod 700 it");
        }
        return dir;
    }

    /** The user this process runs as, or null when it cannot be told. */
    private static UserPrincipal currentUser() {
        Path self = Paths.get("/proc/self"); // owned by the process's effective user on Linux
        try {
            if (Files.isDirectory(self)) {
                return Files.getOwner(self);
            }
        } catch (IOException | UnsupportedOperationException e) {
            // fall back to the name
        }
        try {
            return self.getFileSystem().getUserPrincipalLookupService()
                    .lookupPrincipalByName(System.getProperty("user.name", ""));
        } catch (IOException | UnsupportedOperationException e) {
            return null;
        }
    }

    /** Whether the file is a regular file with the library's size and hash. */
    private static boolean intact(Path file, long size, String hash) throws IOException {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(file, BasicFileAttributes.class,
                    LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return false;
        }
        return attributes.isRegularFile() && attributes.size() == size
                && sha256(Files.readAllBytes(file)).equals(hash);
    }

    /** Writes the library under a temporary name and renames it over {@code target}. */
    private static void extract(Path dir, Path target, byte[] library) throws IOException {
        deleteStaleTemporaries(dir);
        Path temporary = Files.createTempFile(dir, target.getFileName() + ".", ".tmp");
        try {
            Files.write(temporary, library);
            // rename(2): atomic, and replaces a partial or altered file of the same name
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(temporary);
        }
    }

    /** Deletes temporary files left by JVMs killed while writing, an hour on. */
    private static void deleteStaleTemporaries(Path dir) {
        long cutoff = System.currentTimeMillis() - STALE_TEMP_MILLIS;
        try (DirectoryStream<Path> temporaries = Files.newDirectoryStream(dir, "*.tmp")) {
            for (Path temporary : temporaries) {
                if (Files.getLastModifiedTime(temporary, LinkOption.NOFOLLOW_LINKS).toMillis()
                        < cutoff) {
                    Files.deleteIfExists(temporary);
                }
            }
        } catch (IOException e) {
            // best effort: the new file is written anyway
        }
    }

    /** The jar's {@code Implementation-Version}, or {@code dev} outside a jar. */
    private static String version() {
        Package p = NativeLibrary.class.getPackage();
        String version = p == null ? null : p.getImplementationVersion();
        if (version == null || version.isEmpty()) {
            return "dev";
        }
        return version.replaceAll("[^A-Za-z0-9._+-]", "_");
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(1 << 23);
        byte[] buffer = new byte[1 << 16];
        for (int n; (n = in.read(buffer)) > 0; ) {
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    private static String sha256(byte[] bytes) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(bytes);
            StringBuilder hex = new StringBuilder(digest.length * 2);
            for (byte b : digest) {
                hex.append(Character.forDigit((b >> 4) & 0xf, 16))
                        .append(Character.forDigit(b & 0xf, 16));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e); // required by the JDK
        }
    }

    /** The shared directory exists but is not safe to load code from. */
    private static final class UnsafeDirectoryException extends IOException {
        private static final long serialVersionUID = 1L;

        UnsafeDirectoryException(String message) {
            super(message);
        }
    }

    private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
        error.initCause(cause);
        return error;
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
