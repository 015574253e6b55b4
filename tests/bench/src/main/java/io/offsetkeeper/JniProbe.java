package io.offsetkeeper;

/**
 * The benchmark's window on the JNI surface (same package as the package-private bridge; the
 * bench is not part of the jar): the bulk validate the engine's load uses, and the cheapest
 * round trip there is, {@code close(0)}, which crosses into Rust and does nothing.
 */
public final class JniProbe {
    private JniProbe() {}

    public static void loadLibrary() {
        NativeLibrary.load();
    }

    /** Validates every entry with the default policy; returns the chosen offsets. */
    public static long[] validate(byte[] storedKinds, long[] storedOffsets, long[] earliest,
            long[] latest) {
        return (long[]) NativeBridge.validate(storedKinds, storedOffsets, earliest, latest, null,
                null, null)[0];
    }

    public static void emptyRoundTrip() {
        NativeBridge.close(0L);
    }
}
