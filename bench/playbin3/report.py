#!/usr/bin/python3
"""The tables of bench/playbin3.md, from the JSON lines bench/playbin3/run collected.

    bench/playbin3/report.py RESULTS_DIR

Each cell is the median over the repetitions with [lowest–highest] when they differ, or the
list of what each repetition gave when the values are counts that should all be 0.
"""

import json
import os
import statistics
import sys
from collections import defaultdict

folder = sys.argv[1]


def load(test):
    path = os.path.join(folder, f"{test}.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def spread(values, digits=1):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    middle = statistics.median(values)
    text = f"{middle:.{digits}f}"
    if min(values) != max(values):
        text += f" [{min(values):.{digits}f}–{max(values):.{digits}f}]"
    return text


def each(values):
    """What each repetition gave, compactly: `0 ×3`, or the values in order."""
    values = [json.dumps(v) if isinstance(v, (list, dict)) else str(v) for v in values]
    if values and all(v == values[0] for v in values):
        return f"{values[0]} ×{len(values)}"
    return ", ".join(values)


def group(rows, *keys):
    groups = defaultdict(list)
    for row in rows:
        groups[tuple(row.get(key) for key in keys)].append(row)
    return groups


def failed(rows):
    return [row for row in rows if "failed" in row]


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print()


about = os.path.join(folder, "about.txt")
if os.path.exists(about):
    with open(about) as file:
        print("Run: " + file.read().strip().replace("\n", "; ") + "\n")

# 1. Gapless
rows = load("gapless")
lines = []
ORDER = ["flac", "mp3", "ogg", "mixed", "short-flac", "short-mixed"]
for (impl, set_name), runs in sorted(group([r for r in rows if "failed" not in r], "impl", "set").items(),
                                      key=lambda item: (ORDER.index(item[0][1]), item[0][0])):
    leads, preroll, stream_start_offsets, title_offsets = [], 0, [], []
    for run in runs:
        boundaries = run["boundaries_s"]
        for k, emitted in enumerate(run["about_to_finish_rt"][:len(boundaries) - 1]):
            if emitted is None:
                preroll += 1
            else:
                leads.append((boundaries[k] - emitted) * 1000)
        for k, started in enumerate(run["stream_start_rt"][1:]):
            if started is not None:
                stream_start_offsets.append((started - boundaries[k]) * 1000)
        for running, title in run["titles"][1:]:
            k = int(title.split("-")[-1])
            if running is not None and k >= 1:
                title_offsets.append((running - boundaries[k - 1]) * 1000)
    lines.append([
        set_name, impl, each([run["joints"] for run in runs]), each([run["length_error"] for run in runs]),
        each([run["max_difference"] for run in runs]),
        spread(leads, 0) + (f"; {preroll} of {2 * len(runs)} while prerolling" if preroll else ""),
        each([run["asks_before_stream_start"] for run in runs]),
        spread(stream_start_offsets, 0), spread(title_offsets, 0),
        each([run["async_done"] for run in runs]),
        spread([p for run in runs for p in run["position_0.25s_after_boundary"] if p is not None], 2),
    ])
print("### 1. Gapless\n")
table(["tracks", "impl", "samples inserted (+) / lost (−) at the 2 joints", "length − expected", "largest sample difference (LSB)",
       "about-to-finish: ms before the current track ends", "about-to-finish before its track's STREAM_START",
       "STREAM_START − boundary (ms)", "new title tag − boundary (ms)", "ASYNC_DONE per run",
       "position 0.25 s after a boundary (s)"], lines)
if failed(rows):
    print(f"Failed runs: {failed(rows)}\n")

# 2. Rate
rows = load("rate")
lines = []
for (rate, impl), runs in sorted(group([r for r in rows if "failed" not in r], "rate", "impl").items()):
    lines.append([
        rate, impl, each([f"{run['paused_seek_accepted']}/{run['live_seek_accepted']}".lower() for run in runs]),
        spread([run["length_ratio"] for run in runs], 4), spread([run["frequency_hz"] for run in runs], 2),
        spread([run["paused_seek_ms"] for run in runs]), spread([run["live_first_buffer_ms"] for run in runs]),
        spread([run["live_async_done_ms"] for run in runs]), spread([run["live_speed"] for run in runs], 3),
        each([tuple(run["sink_segment_rate_applied_rate"] or ()) for run in runs]),
    ])
print("### 2. Rate with pitch kept (scaletempo)\n")
table(["rate", "impl", "seek accepted (paused/playing)", "output length × rate / input length", "tone in output (Hz; 1000 in)",
       "paused: seek → ASYNC_DONE (ms)", "playing: seek → first buffer of new segment at sink (ms)",
       "playing: seek → ASYNC_DONE (ms)", "position speed after (× real time)", "sink segment (rate, applied_rate)"], lines)
if failed(rows):
    print(f"Failed runs: {failed(rows)}\n")

# 3. Video as audio
rows = load("video")
lines = []
for (file, impl), runs in sorted(group([r for r in rows if "failed" not in r], "file", "impl").items(), reverse=True):
    lines.append([file, impl, each([",".join(run["video_decoders"]) or "none" for run in runs]),
                  spread([run["cpu_s"] * 1000 for run in runs], 0), spread([run["wall_s"] * 1000 for run in runs], 0),
                  spread([run["threads"] for run in runs], 0)])
print("### 3. A video file played as audio (10 s, 640×480 VP8 + Vorbis in Matroska; sink not synced)\n")
table(["file", "impl", "video decoder built", "CPU time to EOS (ms)", "wall time to EOS (ms)", "threads at EOS"], lines)
for (file, impl), runs in sorted(group([r for r in rows if "failed" not in r], "file", "impl").items(), reverse=True):
    if file == "video.mkv":
        print(f"- {impl}: {', '.join(runs[0]['created'])}")
print()

# 4. HTTP stream
rows = load("http")
lines = []
for (url, impl), runs in sorted(group([r for r in rows if "failed" not in r], "url", "impl").items()):
    lines.append([url, impl, spread([len(run["titles"]) for run in runs], 0), spread([run["first_title_s"] for run in runs], 2),
                  each([",".join(run["tag_sources"]) or "–" for run in runs]),
                  spread([run["buffering_messages"] for run in runs], 0),
                  each([",".join(run["buffering_sources"]) or "–" for run in runs]),
                  spread([run["buffering_pauses"] for run in runs], 0),
                  spread([run["first_buffer_s"] for run in runs], 3), spread([run["first_playing_s"] for run in runs], 3),
                  each([len(run["errors"]) for run in runs])])
print("### 4. HTTP stream with ICY titles (scripts/http-test-server, 8 s each)\n")
table(["stream", "impl", "distinct ICY titles seen as tags", "first title (s)", "tag posted by", "BUFFERING messages",
       "posted by", "pauses for buffering", "first buffer at sink (s)", "PLAYING reached: audible (s)", "errors"], lines)
if failed(rows):
    print(f"Failed runs: {failed(rows)}\n")

# 5. Storm
rows = load("storm")
lines = []
for (teardown, impl), runs in sorted(group(rows, "teardown", "impl").items(), key=lambda item: (item[0][0] != "ready", item[0][1])):
    ok = [run for run in runs if "failed" not in run]
    lines.append([teardown, impl, f"{len(ok)} of {len(runs)}", spread([run["loads"] for run in ok], 0),
                  each([run["stuck"] for run in ok]), each([run["stuck_in"] for run in ok]),
                  each([sum(run["errors"].values()) for run in ok]),
                  spread([100 * run["async_done"] / run["loads"] for run in ok], 0),
                  each([run["final_load"] for run in ok]),
                  spread([run["call_ms_p50"] for run in ok], 2), spread([run["call_ms_p99"] for run in ok], 1),
                  spread([run["call_ms_max"] for run in ok], 1)])
print("### 5. Storm: a new URI 20 times a second on half-second tracks, 20 s per run\n")
table(["teardown", "impl", "runs completed", "loads", "stuck calls (> 3 s) per run", "stuck in", "errors per run",
       "loads reaching ASYNC_DONE (%)", "a load after the storm", "call p50 (ms)", "call p99 (ms)", "call max (ms)"], lines)
errors = defaultdict(int)
for run in rows:
    for message, count in run.get("errors", {}).items():
        errors[(run["impl"], message)] += count
if errors:
    print("Errors: " + "; ".join(f"{impl}: {message} ×{count}" for (impl, message), count in sorted(errors.items())) + "\n")

# 6. Memory
rows = load("memory")
lines = []
for (impl,), runs in sorted(group([r for r in rows if "failed" not in r], "impl").items()):
    lines.append([impl, spread([run["rss_kib"][0] / 1024 for run in runs]), spread([run["rss_kib"][-1] / 1024 for run in runs]),
                  spread([run["growth_kib"] for run in runs], 0), spread([run["per_load_bytes"] for run in runs], 0),
                  spread([run["ms_per_load_per_100"][0] for run in runs]), spread([run["ms_per_load_per_100"][-1] for run in runs]),
                  each([run["elements_at_end"] for run in runs]), each([run["repeated_elements_at_end"] for run in runs]),
                  each([run["stuck"] for run in runs]), each([run["no_async_done"] for run in runs])])
print("### 6. Memory: 500 track changes (READY, uri, PLAYING, ASYNC_DONE) on 2 s tracks\n")
table(["impl", "RSS after 20 warm-up loads (MiB)", "after 500 more (MiB)", "growth (KiB)", "growth per load (bytes)",
       "ms per load, loads 1–100", "ms per load, loads 401–500", "elements in the pipeline at the end",
       "elements there more than twice", "stuck", "loads without ASYNC_DONE in 3 s"], lines)
if failed(rows):
    print(f"Failed runs: {failed(rows)}\n")
