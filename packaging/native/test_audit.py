#!/usr/bin/env python3
"""The audit can fail: each rule rejects a bad input, and a binary of this machine (built for its
newer glibc) is refused. Run: python3 packaging/native/test_audit.py"""

import contextlib
import io
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import audit_elf  # noqa: E402

GOOD_JNI = """\
ELF Header:
  Machine:                           AArch64

Dynamic section at offset 0x1 contains 3 entries:
  Tag        Type                         Name/Value
 0x0000000000000001 (NEEDED)             Shared library: [libgcc_s.so.1]
 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
 0x0000000000000001 (NEEDED)             Shared library: [ld-linux-aarch64.so.1]

Symbol table '.dynsym' contains 5 entries:
   Num:    Value          Size Type    Bind   Vis      Ndx Name
     0: 0000000000000000     0 NOTYPE  LOCAL  DEFAULT  UND 
     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND pthread_create@GLIBC_2.17 (2)
     2: 0000000000000000     0 FUNC    WEAK   DEFAULT  UND __cxa_finalize@GLIBC_2.17 (2)
     3: 0000000000012340    12 FUNC    GLOBAL DEFAULT   12 Java_io_offsetkeeper_NativeBridge_open
     4: 0000000000012350    12 FUNC    GLOBAL DEFAULT   12 JNI_OnLoad

Version needs section '.gnu.version_r' contains 1 entry:
 Addr: 0x0000000000000400  Offset: 0x000400  Link: 4 (.dynstr)
  000000: Version: 1  File: libc.so.6  Cnt: 1
  0x0010:   Name: GLIBC_2.17  Flags: none  Version: 2
"""


def findings(report, jni=True, machine="aarch64"):
    return audit_elf.check(audit_elf.parse(report), max_glibc="2.17", jni=jni, machine=machine)


class AuditRules(unittest.TestCase):
    def test_a_good_library_passes(self):
        self.assertEqual(findings(GOOD_JNI), [])
        self.assertEqual(audit_elf.highest_glibc(audit_elf.parse(GOOD_JNI)), "GLIBC_2.17")

    def test_a_newer_glibc_symbol_is_named(self):
        bad = GOOD_JNI.replace("pthread_create@GLIBC_2.17", "pthread_create@GLIBC_2.34").replace(
            "Name: GLIBC_2.17", "Name: GLIBC_2.34")
        self.assertEqual(findings(bad), ["symbol pthread_create@GLIBC_2.34 needs glibc newer than 2.17"])

    def test_versions_compare_as_numbers(self):
        # 2.2.5 is older than 2.17, 2.18 is newer: not a string comparison.
        ok = GOOD_JNI.replace("pthread_create@GLIBC_2.17", "pthread_create@GLIBC_2.2.5")
        self.assertEqual(findings(ok), [])
        bad = GOOD_JNI.replace("pthread_create@GLIBC_2.17", "pthread_create@GLIBC_2.18")
        self.assertEqual(findings(bad), ["symbol pthread_create@GLIBC_2.18 needs glibc newer than 2.17"])

    def test_a_foreign_library_is_named(self):
        bad = GOOD_JNI.replace("[libgcc_s.so.1]", "[libssl.so.3]")
        self.assertEqual(len(findings(bad)), 1)
        self.assertIn("NEEDED libssl.so.3", findings(bad)[0])

    def test_a_jni_library_exporting_more_is_named(self):
        bad = GOOD_JNI.replace("12 JNI_OnLoad", "12 rd_kafka_new")
        self.assertEqual(findings(bad), ["exported symbol rd_kafka_new is not Java_* or JNI_On*"])
        # An executable may export what it likes.
        self.assertEqual(findings(bad, jni=False), [])

    def test_a_test_only_entry_point_is_named(self):
        bad = GOOD_JNI.replace("12 JNI_OnLoad", "12 Java_io_offsetkeeper_PanicTest_panicForTest")
        self.assertEqual(findings(bad), ["exported symbol Java_io_offsetkeeper_PanicTest_panicForTest"
                                         " is a test-only entry point"])

    def test_the_wrong_machine_is_named(self):
        self.assertIn("expected 'Advanced Micro Devices X86-64'", findings(GOOD_JNI, machine="x86_64")[0])


class AuditOfRealBinaries(unittest.TestCase):
    def test_this_machines_python_is_refused(self):
        # Debian 12's python3 needs GLIBC_2.34 and more (and libz, libexpat): the audit must say so.
        python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = audit_elf.main(["--exe", python])
        self.assertEqual(status, 1, err.getvalue())
        self.assertRegex(err.getvalue(), r"FAIL .*: symbol \S+@GLIBC_2\.(1[89]|[2-9]\d)")

    def test_a_missing_file_fails(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = audit_elf.main(["--jni", "/nonexistent/liboffsetkeeper_jni.so"])
        self.assertEqual(status, 1)
        self.assertIn("no such file", err.getvalue())


if __name__ == "__main__":
    unittest.main(verbosity=1)
