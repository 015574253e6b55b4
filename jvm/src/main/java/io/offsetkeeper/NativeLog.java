package io.offsetkeeper;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives the native library's Rust {@code log} records. Native code resolves this class and
 * its two methods once, on the first native call (the library has no {@code JNI_OnLoad}), so
 * their names and signatures are part of the JNI contract.
 */
final class NativeLog {
    /** The logger whose level decides what Rust forwards at all. */
    static final String ROOT_LOGGER = "offsetkeeper";

    private NativeLog() {}

    /**
     * Logs one record to the SLF4J logger named after the Rust target, which native code
     * passes with {@code .} for {@code ::} ({@code offsetkeeper.keeper}), so that settings for
     * the {@code offsetkeeper} logger cover every module. Never throws: an exception here would
     * surface in whatever native call happened to log.
     *
     * @param level 1 = error, 2 = warn, 3 = info, 4 = debug, 5 = trace
     */
    static void log(int level, String target, String message) {
        try {
            Logger logger = LoggerFactory.getLogger(
                    target == null || target.isEmpty() ? ROOT_LOGGER : target);
            if (level <= 1) {
                logger.error(message);
            } else if (level == 2) {
                logger.warn(message);
            } else if (level == 3) {
                logger.info(message);
            } else if (level == 4) {
                logger.debug(message);
            } else {
                logger.trace(message);
            }
        } catch (Throwable ignored) {
            // A broken logging setup must not break offset handling.
        }
    }

    /**
     * The most verbose level enabled for the {@code offsetkeeper} logger (5 = trace ... 1 =
     * error, 0 = nothing), so that native code skips formatting records nobody would see.
     */
    static int maxLevel() {
        try {
            Logger logger = LoggerFactory.getLogger(ROOT_LOGGER);
            if (logger.isTraceEnabled()) return 5;
            if (logger.isDebugEnabled()) return 4;
            if (logger.isInfoEnabled()) return 3;
            if (logger.isWarnEnabled()) return 2;
            if (logger.isErrorEnabled()) return 1;
            return 0;
        } catch (Throwable e) {
            return 0; // no usable SLF4J: nothing could be logged anyway
        }
    }
}
