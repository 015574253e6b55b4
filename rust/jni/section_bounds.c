/*
 * Keeps linker-made section bounds out of the library's dynamic symbols.
 *
 * linkme (rsasl's mechanism registry, through zookeeper-client's SASL) reads its sections through
 * __start_<section> and __stop_<section>, which the linker defines. LLD (zig's linker) defines
 * them with protected visibility and exports them whatever the version script says; a reference
 * with hidden visibility makes them hidden (the most constraining visibility wins), so only the
 * Java_* entry points are exported (rust/jni/exports.map, checked by packaging/native/audit_elf.py).
 * The references are weak: a section that does not exist leaves them null.
 */
#define HIDDEN_BOUNDS(section)                                                                  \
    extern char __start_##section[] __attribute__((visibility("hidden"), weak));               \
    extern char __stop_##section[] __attribute__((visibility("hidden"), weak));

HIDDEN_BOUNDS(linkme_MECHANISMS)
HIDDEN_BOUNDS(linkm2_MECHANISMS)
HIDDEN_BOUNDS(linkme_COMPATS)
HIDDEN_BOUNDS(linkm2_COMPATS)

__attribute__((used, visibility("hidden"))) void *const offsetkeeper_section_bounds[] = {
    __start_linkme_MECHANISMS, __stop_linkme_MECHANISMS, __start_linkm2_MECHANISMS,
    __stop_linkm2_MECHANISMS,  __start_linkme_COMPATS,   __stop_linkme_COMPATS,
    __start_linkm2_COMPATS,    __stop_linkm2_COMPATS,
};
