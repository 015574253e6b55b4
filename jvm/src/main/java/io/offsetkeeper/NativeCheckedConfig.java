package io.offsetkeeper;

/**
 * {@link NativeBridge#checkConfig}'s answer. Built by native code through the constructor, whose
 * descriptor rust/jni/src/results.rs holds (its unit test checks it against this file).
 */
final class NativeCheckedConfig {
    /** The configuration as the engine read it, its defaults included, secrets masked. */
    final String description;
    /** The settings as they may be shown, {@code {key=value, ...}}, {@code ****} for secrets. */
    final String shownSettings;
    /** The kafkaParams the same way. */
    final String shownKafkaParams;

    NativeCheckedConfig(String description, String shownSettings, String shownKafkaParams) {
        this.description = description;
        this.shownSettings = shownSettings;
        this.shownKafkaParams = shownKafkaParams;
    }
}
