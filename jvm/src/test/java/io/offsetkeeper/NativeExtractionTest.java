package io.offsetkeeper;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.After;
import org.junit.Test;

/**
 * Where fresh JVMs put the jar's native library: one shared owner-only directory per user in
 * java.io.tmpdir, one file per library version and hash, reused, repaired when damaged, and a
 * clear error when java.io.tmpdir cannot be written.
 */
public class NativeExtractionTest {
    private static final String USER_DIR = "offsetkeeper-"
            + System.getProperty("user.name").replaceAll("[^A-Za-z0-9._-]", "_");

    private final List<Path> created = new ArrayList<>();

    /** A fresh directory to be java.io.tmpdir, deleted after the test. */
    private Path tmpdir() throws IOException {
        Path dir = Files.createTempDirectory("tmpdir-");
        created.add(dir);
        return dir;
    }

    @After
    public void deleteTmpdirs() throws IOException {
        for (Path dir : created) {
            dir.toFile().setWritable(true);
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                    Files.delete(p);
                }
            }
        }
    }

    /** Exit code and output of LoadNative in a fresh JVM with the given java.io.tmpdir. */
    private static String[] run(Path tmpdir, List<String> prefix, String... args) throws Exception {
        String classpath = System.getProperty("offsetkeeper.test.standaloneClasspath");
        assertTrue("offsetkeeper.test.standaloneClasspath is not set (Gradle sets it)",
                classpath != null && classpath.contains(".jar"));
        List<String> command = new ArrayList<>(prefix);
        command.addAll(Arrays.asList(
                System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
                "-Djava.io.tmpdir=" + tmpdir, "-cp", classpath, LoadNative.class.getName()));
        command.addAll(Arrays.asList(args));
        Path output = Files.createTempFile("extraction-", ".out");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile());
            builder.environment().remove("JAVA_TOOL_OPTIONS");
            Process process = builder.start();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the fresh JVM did not finish in 60 s");
            }
            return new String[] {String.valueOf(process.exitValue()),
                new String(Files.readAllBytes(output), StandardCharsets.UTF_8)};
        } finally {
            Files.delete(output);
        }
    }

    private static String[] run(Path tmpdir, String... args) throws Exception {
        return run(tmpdir, Collections.<String>emptyList(), args);
    }

    private static void assertLoaded(String[] result) {
        assertEquals(result[1], "0", result[0]);
        assertTrue(result[1], result[1].contains("LOADED KEPT"));
    }

    /** The files in the shared directory. */
    private static List<Path> files(Path tmpdir) throws IOException {
        try (Stream<Path> list = Files.list(tmpdir.resolve(USER_DIR))) {
            return list.sorted().collect(Collectors.toList());
        }
    }

    /** The one extracted library, checked by name. */
    private static Path theLibrary(Path tmpdir) throws IOException {
        List<Path> files = files(tmpdir);
        assertEquals(files.toString(), 1, files.size());
        String name = files.get(0).getFileName().toString();
        assertTrue(name, name.matches("liboffsetkeeper_jni-[0-9A-Za-z._+-]+-[0-9a-f]{16}\\.so"));
        return files.get(0);
    }

    @Test
    public void aSecondJvmReusesTheExtractedFile() throws Exception {
        Path tmpdir = tmpdir();
        assertLoaded(run(tmpdir));
        assertEquals("rwx------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(tmpdir.resolve(USER_DIR))));
        Path library = theLibrary(tmpdir);
        Object inode = Files.readAttributes(library,
                java.nio.file.attribute.BasicFileAttributes.class).fileKey();
        long modified = Files.getLastModifiedTime(library).toMillis();

        assertLoaded(run(tmpdir));
        assertEquals(library, theLibrary(tmpdir));
        assertEquals(inode, Files.readAttributes(library,
                java.nio.file.attribute.BasicFileAttributes.class).fileKey());
        assertEquals(modified, Files.getLastModifiedTime(library).toMillis());
    }

    @Test
    public void aPartialOrAlteredFileIsReplaced() throws Exception {
        Path tmpdir = tmpdir();
        assertLoaded(run(tmpdir));
        Path library = theLibrary(tmpdir);
        byte[] good = Files.readAllBytes(library);

        try (RandomAccessFile file = new RandomAccessFile(library.toFile(), "rw")) {
            file.setLength(good.length / 2); // a JVM killed while copying, before renames were used
        }
        assertLoaded(run(tmpdir));
        assertEquals(library, theLibrary(tmpdir));
        assertArrayEquals(good, Files.readAllBytes(library));

        byte[] altered = good.clone();
        altered[altered.length / 2] ^= 0x5a; // same size, other content
        Files.write(library, altered);
        assertLoaded(run(tmpdir));
        assertEquals(library, theLibrary(tmpdir));
        assertArrayEquals(good, Files.readAllBytes(library));
    }

    @Test
    public void twoClassLoadersInOneJvmShareNoFile() throws Exception {
        Path tmpdir = tmpdir();
        String[] result = run(tmpdir, "twoLoaders");
        assertEquals(result[1], "0", result[0]);
        assertEquals(result[1], 2, result[1].split("LOADED KEPT", -1).length - 1);
        theLibrary(tmpdir); // the second loader's private copy is gone
    }

    @Test
    public void aReadOnlyTmpdirIsNamed() throws Exception {
        Path tmpdir = tmpdir();
        List<String> prefix;
        if (System.getProperty("user.name").equals("root")) {
            // Permissions do not stop root: a read-only bind mount in a mount namespace of its own.
            prefix = Arrays.asList("unshare", "-m", "sh", "-c",
                    "mount --bind -o ro \"$0\" \"$0\" && exec \"$@\"", tmpdir.toString());
        } else {
            Files.setPosixFilePermissions(tmpdir, PosixFilePermissions.fromString("r-x------"));
            prefix = Collections.emptyList();
        }
        String[] result = run(tmpdir, prefix);
        String out = result[1];
        assertEquals(out, "2", result[0]);
        assertTrue(out, out.contains("java.io.tmpdir=" + tmpdir + " is read-only or not writable"));
        assertTrue(out, out.contains("-Djava.io.tmpdir"));
        assertTrue(out, out.contains("-D" + NativeLibrary.OVERRIDE_PROPERTY + "="));
        Files.setPosixFilePermissions(tmpdir, PosixFilePermissions.fromString("rwx------"));
    }

    @Test
    public void aSharedDirectoryOthersCanWriteIsRefused() throws Exception {
        Path tmpdir = tmpdir();
        Path shared = Files.createDirectory(tmpdir.resolve(USER_DIR));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        String[] result = run(tmpdir);
        assertEquals(result[1], "2", result[0]);
        assertTrue(result[1], result[1].contains(shared + " is writable by group or others"));
        assertEquals(Collections.emptyList(), files(tmpdir));
    }

    @Test
    public void aSharedDirectoryOfAnotherUserIsRefused() throws Exception {
        org.junit.Assume.assumeTrue("only root can give a directory away",
                System.getProperty("user.name").equals("root"));
        Path tmpdir = tmpdir();
        Path shared = Files.createDirectory(tmpdir.resolve(USER_DIR));
        Files.setOwner(shared, shared.getFileSystem().getUserPrincipalLookupService()
                .lookupPrincipalByName("nobody"));
        String[] result = run(tmpdir);
        assertEquals(result[1], "2", result[0]);
        assertTrue(result[1], result[1].contains(shared + " is owned by nobody"));
    }
}
