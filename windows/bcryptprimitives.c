/*
 * A stand-in for bcryptprimitives.dll, for running this crate's Windows tests under Wine only.
 *
 * Rust's standard library on Windows takes its random bytes (HashMap keys) from
 * `ProcessPrng` in bcryptprimitives.dll. Wine 8 (Debian 12) has no such DLL, so every Rust
 * .exe fails to start under it. This DLL exports `ProcessPrng` over advapi32's
 * `SystemFunction036` (RtlGenRandom), which Wine has. scripts/windows-test.sh builds it with
 * mingw and places it beside the test executables; Windows itself never loads it (its own
 * system copy comes first for a known DLL) and it is never shipped.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
