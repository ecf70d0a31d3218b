"""messageframe against Python's MessagePack libraries, in one process.

    python -m messageframe.bench [--quick] [--repeat N] [--json FILE]

Every backend gets the same message (the crossbench scenarios of
docs/performance.md: 4, 32 and 1,024 parameters, the 64-parameter
telemetry frame with its 16 KiB spectrum, 4 parameters with a 1 MiB
attachment) and does the same work:

- decode: the frame's bytes (one and the same input for every backend:
  messageframe's wire format is plain MessagePack) -> one lookup of the last
  parameter by (device, param) -> the attachment's length;
- build + encode: from the same {device: {param: value}} dict (and the
  attachment's bytes) -> the frame's bytes. Every backend writes exactly the
  same bytes (checked before timing).

Each backend is used at its best: msgpack.unpackb/packb, ormsgpack's
unpackb/packb, a reused msgspec Decoder typed to read attachments as
memoryviews (zero copy) and a reused msgspec Encoder. "msgpack + dict" is
what a msgpack user writes to look parameters up by (device, param): unpack,
then split every key into {device: {param: value}}.

Backends are timed in turn, round-robin, each repeat a batch of calls;
the figure is the minimum per call over the repeats (the least disturbed).
Ratios are the other backend's time over messageframe's: above 1,
messageframe is faster. Missing libraries are reported, not skipped
silently (pip install msgpack ormsgpack msgspec).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from typing import Any, Callable

import messageframe as mf

HEADER = dict(message_id=200, message_type=7, source=1, target=2, counter=0, timestamp=1_700_000_000_000)
HEADER_LIST = [1_700_000_000_000, 0, 1, 2, 200, 7, 1, 0]
SEP = "\x1f"

C40 = 1 << 40

# The crossbench telemetry message (crates/messageframe-bench/src/scenario.rs).
TELEMETRY: list[tuple[str, list[tuple[str, Any]]]] = [
    ("sdr_rx_1", [("center_freq_hz", 433_920_012.5), ("sample_rate_sps", 2_400_000.5), ("rx_gain_db", 38.6),
                  ("rssi_dbm", -87.25), ("samples_received", C40 + 123_456_789), ("overflow_count", 17),
                  ("agc_enabled", True), ("status", "locked, streaming")]),
    ("sdr_tx_2", [("center_freq_hz", 868_300_007.75), ("tx_power_dbm", 14.25), ("pa_temperature_c", 51.375),
                  ("vswr", 1.35), ("samples_sent", C40 + 987_654_321), ("underrun_count", 3),
                  ("tx_enabled", False), ("status", "idle: waiting for schedule slot")]),
    ("gnss", [("latitude_deg", 48.1371543), ("longitude_deg", 11.5753821), ("altitude_m", 519.62),
              ("hdop", 0.87), ("satellites_used", 11), ("time_of_week_ms", 345_600_250),
              ("fix_valid", True), ("fix_type", "3D fix, SBAS corrected")]),
    ("power_supply_main_bus_controller", [
        ("bus_voltage_v", 12.6), ("bus_current_a", 3.215), ("battery_state_of_charge_percent", 87.5),
        ("input_power_w", 40.5), ("energy_delivered_mwh_total", C40 + 42_424_242), ("brownout_events", 2),
        ("charging", True), ("last_fault", "overcurrent on rail 3V3 (cleared)")]),
    ("antenna_rotator", [("azimuth_deg", 217.35), ("elevation_deg", 12.125), ("target_azimuth_deg", 217.5),
                         ("motor_current_a", 0.42), ("steps_total", C40 + 5_000_001), ("limit_switch_hits", 4),
                         ("moving", True), ("mode", "tracking")]),
    ("température_boîtier", [("capteur_intérieur_°c", 24.75), ("capteur_extérieur_°c", -3.5),
                             ("humidité_relative_%", 41.2), ("point_de_rosée_°c", -9.25),
                             ("cycles_ventilateur", 1_234_567), ("uptime_s", 8_640_123),
                             ("ventilateur_actif", False), ("état", "nominal")]),
    ("µwave_link", [("link_margin_db", 6.75), ("snr_db", 23.4), ("frequency_ghz", 10.368125),
                    ("bit_error_rate", 1.5e-7), ("frames_ok", C40 + 777_777), ("frames_crc_error", 12),
                    ("encrypted", True), ("peer", "relay-station-north-ridge")]),
    ("clock_ref_10mhz", [("frequency_offset_ppb", -0.125), ("phase_error_ns", 3.75),
                         ("oven_temperature_c", 70.0625), ("holdover_s", 0.5), ("pps_pulses", C40 + 86_400),
                         ("lock_loss_count", 1), ("locked", True), ("source", "GNSS-disciplined OCXO")]),
]


def spectrum() -> bytes:
    """The telemetry scenario's 16 KiB spectrum: 4,096 f32 bins, as crossbench makes it."""
    import struct

    state = 0x9E3779B9
    out = bytearray()
    for i in range(4096):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        noise = (state % 1000) / 250.0 - 2.0

        def carrier(centre: float, height: float) -> float:
            d = (i - centre) / 6.0
            return height / (1.0 + d * d)

        out += struct.pack("<f", -100.0 + noise + carrier(1200.0, 62.0) + carrier(3100.0, 35.0))
    return bytes(out)


class Scenario:
    def __init__(self, name: str, title: str, params: dict[str, dict[str, Any]], last: tuple[str, str],
                 attachment: tuple[str, bytes] | None):
        self.name, self.title, self.params, self.last, self.attachment = name, title, params, last, attachment
        self.count = sum(len(p) for p in params.values())


def synthetic(name: str, title: str, n: int, attachment: int = 0) -> Scenario:
    params: dict[str, dict[str, Any]] = {}
    for k in range(n):
        value = (k * 1.5 + 0.25, k * 1000, k % 3 == 0, f"value_{k}")[k % 4]
        params.setdefault(f"d{k % 8}", {})[f"p{k}"] = value
    att = ("iq", b"\xab" * attachment) if attachment else None
    return Scenario(name, title, params, (f"d{(n - 1) % 8}", f"p{n - 1}"), att)


def scenarios() -> list[Scenario]:
    tele = {device: dict(ps) for device, ps in TELEMETRY}
    last_dev, last_params = TELEMETRY[-1]
    return [
        synthetic("small", "4 params", 4),
        synthetic("medium", "32 params", 32),
        synthetic("large", "1,024 params", 1024),
        Scenario("telemetry", "telemetry (64 params + 16 KiB)", tele, (last_dev, last_params[-1][0]),
                 ("spectrum", spectrum())),
        synthetic("attachment", "4 params + 1 MiB", 4, 1 << 20),
    ]


TAGS = {bool: 40, int: 10, float: 20, str: 30}


def build_message(s: Scenario) -> list[Any]:
    """The frame as generic MessagePack values: what the other libraries pack."""
    flat = {}
    for device, ps in s.params.items():
        for param, v in ps.items():
            flat[device + SEP + param] = [TAGS[type(v)], v]
    atts = [[s.attachment[0], s.attachment[1]]] if s.attachment else []
    return [list(HEADER_LIST), flat, atts]


def backends(s: Scenario) -> tuple[dict[str, Callable[[], Any]], dict[str, Callable[[], Any]], list[str]]:
    """(decode backends, encode backends, missing libraries) for a scenario."""
    dev, par = s.last
    flat_key = dev + SEP + par
    att_name = s.attachment[0] if s.attachment else None
    params = s.params
    att = s.attachment

    def mf_encode() -> bytes:
        f = mf.Frame.from_dict(params, **HEADER)
        if att:
            f.add_attachment(att[0], att[1])
        return f.encode()

    wire = mf_encode()

    def mf_decode() -> tuple[Any, int]:
        f = mf.Frame.decode(wire)
        return f.find(dev, par), (len(f.attachment(att_name)) if att_name else 0)

    dec: dict[str, Callable[[], Any]] = {"messageframe": mf_decode}
    enc: dict[str, Callable[[], Any]] = {"messageframe": mf_encode}
    missing = []

    try:
        import msgpack
    except ImportError:
        missing.append("msgpack")
    else:
        unpackb, packb = msgpack.unpackb, msgpack.packb

        def mp_decode() -> tuple[Any, int]:
            _, p, a = unpackb(wire)[:3]
            return p[flat_key][1], (len(a[0][1]) if a else 0)

        def mp_dict_decode() -> tuple[Any, int]:
            _, p, a = unpackb(wire)[:3]
            by_device: dict[str, dict[str, Any]] = {}
            for key, pair in p.items():
                device, sep, param = key.partition(SEP)
                if not sep:
                    device, param = "", key
                by_device.setdefault(device, {}).setdefault(param, pair[1])
            return by_device[dev][par], (len(a[0][1]) if a else 0)

        def mp_encode() -> bytes:
            return packb(build_message(s))

        prebuilt = build_message(s)

        def mp_packb_only() -> bytes:
            return packb(prebuilt)

        dec["msgpack"] = mp_decode
        dec["msgpack + dict"] = mp_dict_decode
        enc["msgpack"] = mp_encode
        enc["msgpack packb only"] = mp_packb_only

    try:
        import ormsgpack
    except ImportError:
        missing.append("ormsgpack")
    else:
        o_unpackb, o_packb = ormsgpack.unpackb, ormsgpack.packb

        def orm_decode() -> tuple[Any, int]:
            _, p, a = o_unpackb(wire)[:3]
            return p[flat_key][1], (len(a[0][1]) if a else 0)

        def orm_encode() -> bytes:
            return o_packb(build_message(s))

        dec["ormsgpack"] = orm_decode
        enc["ormsgpack"] = orm_encode

    try:
        import msgspec
    except ImportError:
        missing.append("msgspec")
    else:
        decoder = msgspec.msgpack.Decoder(tuple[list[int], dict[str, list[Any]], list[tuple[str, memoryview]]])
        encoder = msgspec.msgpack.Encoder()

        def ms_decode() -> tuple[Any, int]:
            _, p, a = decoder.decode(wire)
            return p[flat_key][1], (len(a[0][1]) if a else 0)

        def ms_encode() -> bytes:
            return encoder.encode(build_message(s))

        dec["msgspec"] = ms_decode
        enc["msgspec"] = ms_encode
    return dec, enc, missing


def check(s: Scenario, dec: dict[str, Callable[[], Any]], enc: dict[str, Callable[[], Any]]) -> None:
    """Every backend reads the same answer and writes the same bytes."""
    want = dec["messageframe"]()
    for name, f in dec.items():
        got = f()
        if got != want:
            raise AssertionError(f"{s.name}: {name} read {got!r}, messageframe {want!r}")
    wire = enc["messageframe"]()
    for name, f in enc.items():
        got = f()
        if got != wire:
            raise AssertionError(f"{s.name}: {name} wrote other bytes than messageframe")


def time_round_robin(fns: dict[str, Callable[[], Any]], budget: float, repeat: int) -> dict[str, float]:
    """Seconds per call of each function: the minimum over `repeat` batches,
    the functions taking turns batch by batch."""
    loops = {}
    for name, f in fns.items():
        n, t0 = 1, time.perf_counter()
        f()
        per = max(time.perf_counter() - t0, 1e-7)
        n = max(1, int(budget / repeat / per))
        loops[name] = n
    best = {name: float("inf") for name in fns}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            for name, f in fns.items():
                n = loops[name]
                r = range(n)
                t0 = time.perf_counter_ns()
                for _ in r:
                    f()
                dt = (time.perf_counter_ns() - t0) / n / 1e9
                best[name] = min(best[name], dt)
    finally:
        if gc_was:
            gc.enable()
    return best


def run(quick: bool = False, repeat: int = 7, budget: float = 0.4) -> dict[str, Any]:
    if quick:
        repeat, budget = 2, 0.004
    results: dict[str, Any] = {"scenarios": [], "missing": []}
    for s in scenarios():
        dec, enc, missing = backends(s)
        results["missing"] = missing
        check(s, dec, enc)
        d = time_round_robin(dec, budget, repeat)
        e = time_round_robin(enc, budget, repeat)
        results["scenarios"].append({
            "name": s.name, "title": s.title, "params": s.count,
            "wire_bytes": len(enc["messageframe"]()),
            "decode_us": {k: v * 1e6 for k, v in d.items()},
            "encode_us": {k: v * 1e6 for k, v in e.items()},
        })
    results["targets"] = targets(results)
    return results


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, judged on this run."""
    out = []
    by = {s["name"]: s for s in results["scenarios"]}
    for s in results["scenarios"]:
        d = s["decode_us"]
        if "msgpack + dict" in d:
            r = d["msgpack + dict"] / d["messageframe"]
            out.append({"target": f"decode + lookup >= 3x msgpack + dict ({s['title']})",
                        "ratio": r, "met": r >= 3.0})
        if "msgspec" in d:
            r = d["msgspec"] / d["messageframe"]
            out.append({"target": f"decode + lookup faster than msgspec's raw decode ({s['title']})",
                        "ratio": r, "met": r > 1.0})
    att = by["attachment"]["decode_us"]["messageframe"]
    out.append({"target": "1 MiB attachment decode (+ lookup + length) under 2 us",
                "us": att, "met": att < 2.0})
    tele = by["telemetry"]["encode_us"]
    if "msgpack" in tele:
        for base, label in (("msgpack", "build the flat message + packb"),
                            ("msgpack packb only", "packb of the prebuilt flat message")):
            r = tele[base] / tele["messageframe"]
            out.append({"target": f"build + encode of 64 params (from_dict) >= 1.5x msgpack ({label})",
                        "ratio": r, "met": r >= 1.5})
    return out


def report(results: dict[str, Any], out=sys.stdout) -> None:
    w = out.write
    w(f"messageframe {mf.__version__}, Python {platform.python_version()}, {platform.machine()}; "
      f"minimum per call over the repeats, backends in turn\n")
    if results["missing"]:
        w(f"NOT MEASURED (not installed): {', '.join(results['missing'])}\n")
    for phase, key in (("decode + lookup + attachment length", "decode_us"), ("build + encode", "encode_us")):
        w(f"\n{phase} (us per message; ratio = its time / messageframe's)\n")
        names = list(results["scenarios"][0][key])
        w(f"{'scenario':34}" + "".join(f"{n:>22}" for n in names) + "\n")
        for s in results["scenarios"]:
            t = s[key]
            mine = t["messageframe"]
            cells = []
            for n in names:
                cells.append(f"{t[n]:9.2f}" if n == "messageframe" else f"{t[n]:9.2f} ({t[n] / mine:5.1f}x)")
            w(f"{s['title']:34}" + "".join(f"{c:>22}" for c in cells) + "\n")
    w("\ntargets\n")
    for t in results["targets"]:
        fig = f"{t['ratio']:.2f}x" if "ratio" in t else f"{t['us']:.2f} us"
        w(f"  [{'met' if t['met'] else 'MISSED'}] {t['target']}: {fig}\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m messageframe.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a few calls each: checks that everything runs")
    p.add_argument("--repeat", type=int, default=7, help="batches per backend (default 7)")
    p.add_argument("--budget", type=float, default=0.4, help="seconds per backend and scenario (default 0.4)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = p.parse_args(argv)
    results = run(quick=a.quick, repeat=a.repeat, budget=a.budget)
    report(results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
