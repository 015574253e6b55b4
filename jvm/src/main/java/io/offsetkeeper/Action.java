package io.offsetkeeper;

import java.util.Locale;

/** What validation did with a partition. The declaration order is the native action code. */
public enum Action {
    /** The stored offset is within range and is used as it is. */
    KEPT,
    /** Nothing was stored; the {@link OnMissing} policy chose where to start. */
    INITIALIZED,
    /** The stored offset was below the earliest offset (retention); moved up. */
    RESET_BELOW_RANGE,
    /** The stored offset was above the latest offset (re-created topic); moved. */
    RESET_ABOVE_RANGE,
    /** The stored value was not an offset; the {@link OnMissing} policy chose where to start. */
    CORRUPT_REPLACED,
    /**
     * The topic was re-created since the offset was stored (its topic ID changed), whatever the
     * range says; the {@link OnRecreated} policy chose where to start.
     */
    RECREATED;

    private static final Action[] BY_CODE = values();

    static Action fromCode(byte code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new OffsetKeeperException("native library returned unknown action code " + code);
        }
        return BY_CODE[code];
    }

    /** The name used in reports and native log lines, such as {@code reset below range}. */
    public String label() {
        if (this == RECREATED) {
            return "re-created";
        }
        return name().toLowerCase(Locale.ROOT).replace('_', ' ');
    }
}
