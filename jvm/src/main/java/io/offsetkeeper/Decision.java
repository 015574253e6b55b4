package io.offsetkeeper;

import java.io.Serializable;

/** The outcome of {@link OffsetKeeper#validate}: where one partition starts and why. */
public final class Decision implements Serializable {
    private static final long serialVersionUID = 1L;

    private final long offset;
    private final Action action;
    private final long recordsLost;

    Decision(long offset, Action action, long recordsLost) {
        this.offset = offset;
        this.action = action;
        this.recordsLost = recordsLost;
    }

    /** The offset to start reading from; always within [earliest, latest]. */
    public long offset() {
        return offset;
    }

    public Action action() {
        return action;
    }

    /** Records the job will never see because of this decision. */
    public long recordsLost() {
        return recordsLost;
    }

    @Override
    public String toString() {
        return "start at " + offset + " (" + action.label() + ", " + recordsLost + " records lost)";
    }
}
