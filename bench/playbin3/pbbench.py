#!/usr/bin/python3
"""playbin (playbin2) against playbin3 on this machine's GStreamer, configured as Quaver does.

    bench/playbin3/pbbench.py media DIR
    bench/playbin3/pbbench.py gapless IMPL DIR SET REP
    bench/playbin3/pbbench.py rate IMPL DIR RATE
    bench/playbin3/pbbench.py video IMPL DIR FILE
    bench/playbin3/pbbench.py http IMPL URL SECONDS
    bench/playbin3/pbbench.py storm IMPL DIR SECONDS [ready|null]
    bench/playbin3/pbbench.py memory IMPL DIR LOADS

IMPL is `playbin` (as Quaver configures it), `playbin3` (the same, with the audio-only
stream selection that playbin3 needs instead of decodebin's autoplug-select), or, to see
what the audio-only hooks do, `playbin-noskip` and `playbin3-noselect` (flags only). Every measurement but `media` prints one JSON object on
stdout; bench/playbin3/run runs them, each in a process of its own (so that CPU time and RSS
are the measurement's alone, and a deadlocked GStreamer cannot hang the next one), and
bench/playbin3/report.py turns what they print into the tables of bench/playbin3.md.

Runs with Debian's python3 (/usr/bin/python3): PyGObject and numpy come from
python3-gi, gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0 and python3-numpy.
"""

import json
import os
import resource
import subprocess
import sys
import threading
import time
import wave

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

import numpy as np  # noqa: E402

Gst.init(None)

RATE = 44100
# What every rendering is converted to before wavenc, so that it compares sample for sample
# with the reference decodes (mono S16 at the tracks' own rate: no conversion happens).
RENDER_CAPS = f"audio/x-raw,format=S16LE,rate={RATE},channels=1"
# The gapless signal's three parts: lengths that are multiples of no frame or block size.
GAPLESS_PARTS = (88_237, 92_611, 83_752)
# Half-second parts of the same signal: tracks shorter than playbin3's read-ahead.
SHORT_PARTS = (22_051, 19_997, 24_103)
GAPLESS_SETS = {  # name: (file name prefix, extension of each part)
    "flac": ("part", ("flac", "flac", "flac")),
    "mp3": ("part", ("mp3", "mp3", "mp3")),
    "ogg": ("part", ("ogg", "ogg", "ogg")),
    "mixed": ("part", ("flac", "mp3", "ogg")),
    "short-flac": ("short-part", ("flac", "flac", "flac")),
    "short-mixed": ("short-part", ("flac", "mp3", "ogg")),
}
TONE_HZ = 1000.0
STUCK_LIMIT = 3.0  # seconds: what Quaver's Pipeline allows a call into GStreamer


# MARK: - Utilities


def items(iterator):
    """The values of a GstIterator (PyGObject without Gst's overrides cannot iterate one)."""
    while True:
        result, value = iterator.next()
        if result == Gst.IteratorResult.RESYNC:
            iterator.resync()
            continue
        if result != Gst.IteratorResult.OK:
            return
        yield value


def factory_name(element):
    factory = element.get_factory()
    return factory.get_name() if factory else type(element).__name__


def is_video_decoder(name):
    factory = Gst.ElementFactory.find(name)
    klass = factory.get_metadata("klass") if factory else ""
    return "Decoder" in klass and ("Video" in klass or "Image" in klass)


def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def thread_count():
    return len(os.listdir("/proc/self/task"))


def loadavg():
    with open("/proc/loadavg") as file:
        return float(file.read().split()[0])


def uri(path):
    return Gst.filename_to_uri(os.path.abspath(path))


def read_wav(path):
    """Samples of a mono S16 WAV, and whether wavenc finalized its header (it rewrites the
    lengths at EOS; a stuck pipeline leaves them 0)."""
    with open(path, "rb") as file:
        data = file.read()
    header_complete = int.from_bytes(data[40:44], "little") != 0
    if not header_complete:
        data = data[:40] + (len(data) - 44).to_bytes(4, "little") + data[44:]
        with open(path, "wb") as file:
            file.write(data)
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int32), header_complete


def gst_launch(*pipeline):
    subprocess.run(["gst-launch-1.0", "-q", *pipeline], check=True, stdin=subprocess.DEVNULL)


# MARK: - The player, configured as Quaver's Pipeline configures playbin


class Player:
    """A playbin or playbin3 set up as Sources/Playback/Pipeline/Pipeline.swift sets up playbin:
    flags audio+soft-volume, scaletempo as audio-filter, video/image/subtitle decoders skipped
    (decodebin's autoplug-select; decodebin3 has no such signal, so for playbin3 the
    equivalent is uridecodebin3's select-stream, audio streams only), playsink's audio queue
    limited to 0.2 s, and the next URI set from about-to-finish. The stream-properties of
    the sink are left out: they only matter to pulsesink."""

    def __init__(self, impl, sink, sync_messages=False, record_elements=False):
        self.impl = impl
        self.pb = Gst.ElementFactory.make(impl.split("-")[0], "quaver-playbin")
        # playbin3 buffers a network stream only with the buffering flag (playbin2's
        # uridecodebin buffers one in its queue2 whatever the flags): without it, no
        # BUFFERING message at all (`playbin3-nobuffering` shows that).
        flags = "audio+soft-volume+buffering" if impl in ("playbin3", "playbin3-noselect") else "audio+soft-volume"
        Gst.util_set_object_arg(self.pb, "flags", flags)
        self.pb.connect("element-setup", self._element_setup)
        self.pb.set_property("audio-filter", Gst.ElementFactory.make("scaletempo"))
        self.sink = Gst.parse_bin_from_description(sink, True)
        self.pb.set_property("audio-sink", self.sink)
        self.aqueue_limited = 0
        self.select_calls = 0
        if impl == "playbin3":
            for child in items(self.pb.iterate_elements()):
                if factory_name(child) == "uridecodebin3":
                    child.connect("select-stream", self._select_stream)
        self.created = []
        if record_elements:
            self.pb.connect("deep-element-added", lambda _pb, _bin, element: self.created.append(factory_name(element)))
        self.next_uris = []
        self.about_to_finish = []  # (wall, running time) of each emission
        self.pb.connect("about-to-finish", self._about_to_finish)
        self.bus = self.pb.get_bus()
        self.t0 = time.monotonic()
        self.log = []  # (wall, running time, type name, source, detail), from the posting thread
        if sync_messages:
            self.bus.set_sync_handler(self._sync_handler)

    # Runs on the thread that creates the element.
    def _element_setup(self, _pb, element):
        name = factory_name(element)
        if name == "decodebin" and self.impl == "playbin" and not getattr(element, "_quaver_hooked", False):
            element._quaver_hooked = True
            element.connect("autoplug-select", self._autoplug_select)
        elif name == "queue" and element.get_name() == "aqueue":
            element.set_property("max-size-time", 200_000_000)
            self.aqueue_limited += 1

    @staticmethod
    def _autoplug_select(_bin, _pad, _caps, factory):
        klass = factory.get_metadata("klass") or ""
        if "Decoder" in klass and ("Video" in klass or "Image" in klass or "Subtitle" in klass):
            return 2  # GST_AUTOPLUG_SELECT_SKIP
        return 0  # GST_AUTOPLUG_SELECT_TRY

    def _select_stream(self, _bin, _collection, stream):
        self.select_calls += 1
        return 1 if stream.get_stream_type() & Gst.StreamType.AUDIO else 0

    def running_time(self):
        clock = self.pb.get_clock()
        if clock is None or self.pb.get_base_time() == 0:
            return None  # not PLAYING yet (prerolling): no running time
        return (clock.get_time() - self.pb.get_base_time()) / Gst.SECOND

    def wall(self):
        return time.monotonic() - self.t0

    def _about_to_finish(self, element):
        self.about_to_finish.append((self.wall(), self.running_time()))
        if self.next_uris:
            element.set_property("uri", self.next_uris.pop(0))

    def _sync_handler(self, _bus, message):
        detail = None
        if message.type == Gst.MessageType.TAG:
            tags = message.parse_tag()
            found, title = tags.get_string("title")
            if not found:
                return Gst.BusSyncReply.PASS
            detail = title
        elif message.type == Gst.MessageType.BUFFERING:
            detail = message.parse_buffering()
        elif message.type == Gst.MessageType.STATE_CHANGED:
            if message.src != self.pb:
                return Gst.BusSyncReply.PASS
            old, new, _pending = message.parse_state_changed()
            detail = f"{old.value_nick}->{new.value_nick}"
        elif message.type in (Gst.MessageType.ERROR, Gst.MessageType.WARNING):
            error, _debug = message.parse_error() if message.type == Gst.MessageType.ERROR else message.parse_warning()
            detail = error.message
        source = message.src.get_path_string() if message.src else "?"
        self.log.append((self.wall(), self.running_time(), Gst.MessageType.get_name(message.type), source, detail))
        return Gst.BusSyncReply.PASS

    def events(self, name):
        return [entry for entry in self.log if entry[2] == name]

    def wait(self, types, timeout):
        """The first message of one of `types` within `timeout` seconds, or None."""
        return self.bus.timed_pop_filtered(int(timeout * Gst.SECOND), types)

    def factories(self):
        return [factory_name(element) for element in items(self.pb.iterate_recurse())]


class Guarded:
    """Calls into GStreamer on a worker thread, waited for at most STUCK_LIMIT, as Quaver's
    Pipeline does: a call that does not return in time is a deadlock (the worker is then
    abandoned with its pipeline, and a new one takes over)."""

    def __init__(self):
        self.durations = []

    def __call__(self, function, *arguments):
        done = threading.Event()
        result = []

        def work():
            result.append(function(*arguments))
            done.set()

        began = time.monotonic()
        threading.Thread(target=work, daemon=True).start()
        if not done.wait(STUCK_LIMIT):
            return "stuck"
        self.durations.append(time.monotonic() - began)
        return result[0]


# MARK: - media


def make_media(folder):
    """Every file the measurements play, generated here (nothing binary is checked in)."""
    os.makedirs(folder, exist_ok=True)
    caps = f"audio/x-raw,format=S16LE,rate={RATE},channels=1"
    # Gapless: one continuous 441 Hz sine with white noise at -20 dBFS mixed in (the noise
    # makes every stretch unique, so aligning a rendering with it is unambiguous), split into
    # three parts, each encoded as FLAC, MP3 (the lame tool: its LAME header carries the
    # encoder delay and padding that a gapless decoder trims) and Ogg Vorbis.
    total = sum(GAPLESS_PARTS)
    full = os.path.join(folder, "gapless-full.wav")
    length = [f"samplesperbuffer={total // 600}", "num-buffers=600"]
    gst_launch("audiomixer", "name=mix", "!", caps, "!", "wavenc", "!", "filesink", f"location={full}",
               "audiotestsrc", "wave=sine", "freq=441", "volume=0.4", *length, "!", caps, "!", "mix.",
               "audiotestsrc", "wave=white-noise", "volume=0.1", *length, "!", caps, "!", "mix.")
    signal, _ = read_wav(full)
    assert len(signal) == total, len(signal)
    for prefix, lengths in (("part", GAPLESS_PARTS), ("short-part", SHORT_PARTS)):
        make_parts(folder, signal, prefix, lengths)

    # Rate: 8 s of a pure tone, to measure the pitch of what scaletempo renders.
    gst_launch("audiotestsrc", "wave=sine", f"freq={int(TONE_HZ)}", "volume=0.5", "samplesperbuffer=1024",
               f"num-buffers={8 * RATE // 1024}", "!", caps, "!", "flacenc", "!", "filesink",
               f"location={folder}/tone.flac")

    # Video played as audio: 10 s of 640x480 VP8 at 30 fps with Vorbis in Matroska, and the
    # same audio alone in Ogg (the baseline: what the audio costs by itself).
    gst_launch("videotestsrc", "num-buffers=300", "pattern=smpte", "!", "video/x-raw,width=640,height=480,framerate=30/1",
               "!", "vp8enc", "deadline=1", "cpu-used=8", "!", "queue", "!", "mux.",
               "audiotestsrc", "wave=sine", "freq=440", "samplesperbuffer=1024", f"num-buffers={10 * RATE // 1024}",
               "!", "audio/x-raw,rate=44100,channels=2", "!", "audioconvert", "!", "vorbisenc", "!", "queue", "!", "mux.",
               "matroskamux", "name=mux", "!", "filesink", f"location={folder}/video.mkv")
    gst_launch("audiotestsrc", "wave=sine", "freq=440", "samplesperbuffer=1024", f"num-buffers={10 * RATE // 1024}",
               "!", "audio/x-raw,rate=44100,channels=2", "!", "audioconvert", "!", "vorbisenc", "!", "oggmux",
               "!", "filesink", f"location={folder}/audio-only.ogg")

    # Storm and memory: half-second and two-second tracks in the three formats.
    for seconds, prefix in ((0.5, "storm"), (2.0, "load")):
        buffers = int(seconds * RATE / 441)
        for index, (extension, chain) in enumerate((("flac", "flacenc"), ("mp3", "lamemp3enc"),
                                                    ("ogg", "vorbisenc ! oggmux"), ("flac", "flacenc"))):
            gst_launch("audiotestsrc", "wave=sine", f"freq={300 + 100 * index}", "samplesperbuffer=441",
                       f"num-buffers={buffers}", "!", "audio/x-raw,rate=44100,channels=2", "!", "audioconvert",
                       "!", *chain.split(), "!", "filesink", f"location={folder}/{prefix}{index}.{extension}")


def make_parts(folder, signal, prefix, lengths):
    """`signal` cut into consecutive parts of `lengths` samples, each tagged with its title
    and encoded to FLAC, MP3 and Ogg Vorbis."""
    start = 0
    for index, count in enumerate(lengths):
        part = os.path.join(folder, f"{prefix}{index}.wav")
        with wave.open(part, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(signal[start:start + count].astype("<i2").tobytes())
        start += count
        title = ["taginject", f"tags=title=Part-{index},artist=Bench"]  # gst-launch drops quotes: no spaces
        gst_launch("filesrc", f"location={part}", "!", "wavparse", "!", "audioconvert", "!", *title,
                   "!", "flacenc", "!", "filesink", f"location={folder}/{prefix}{index}.flac")
        subprocess.run(["lame", "--quiet", "-b", "128", "--tt", f"Part-{index}", "--ta", "Bench", part,
                        f"{folder}/{prefix}{index}.mp3"], check=True)
        gst_launch("filesrc", f"location={part}", "!", "wavparse", "!", "audioconvert", "!", *title,
                   "!", "vorbisenc", "quality=0.5", "!", "oggmux", "!", "filesink", f"location={folder}/{prefix}{index}.ogg")
        # The reference: each file decoded alone. Played gaplessly, the rendering must be
        # exactly these, back to back; what the codec itself adds or trims (an MP3 without a
        # LAME header is padded) shows against the original, not against these.
        for extension in ("flac", "mp3", "ogg"):
            gst_launch("uridecodebin", f"uri={uri(f'{folder}/{prefix}{index}.{extension}')}", "!", "audioconvert", "!",
                       "audioresample", "!", RENDER_CAPS, "!", "wavenc", "!", "filesink",
                       f"location={folder}/{prefix}{index}.{extension}.ref.wav")

def media_list(folder, prefix):
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.startswith(prefix) and not name.endswith(".wav"))


# MARK: - gapless


def find_start(rendered, reference):
    """Where `reference` (one track decoded alone) starts in `rendered`: a window from the
    middle of the track is located by FFT cross-correlation of the first differences (which
    favour the noise over the sine: the sine alone correlates with itself every period,
    anywhere in any track), then refined by the smallest sum of absolute differences."""
    window = 4096
    at = len(reference) // 2 - window // 2
    probe = np.diff(reference[at:at + window + 1].astype(np.float64))
    size = 1 << int(np.ceil(np.log2(len(rendered) + window)))
    correlation = np.fft.irfft(np.fft.rfft(np.diff(rendered.astype(np.float64)), size) * np.conj(np.fft.rfft(probe, size)), size)
    peak = int(np.argmax(correlation[:len(rendered)]))
    best = None
    for candidate in range(max(0, peak - 400), min(len(rendered) - window, peak + 400) + 1):
        error = int(np.abs(rendered[candidate:candidate + window] - reference[at:at + window]).sum())
        if best is None or error < best[1]:
            best = (candidate, error)
    if best is None:
        return None, None
    start = best[0] - at
    # Largest difference over the whole track once aligned (0 when bit-exact).
    lo, hi = max(start, 0), min(start + len(reference), len(rendered))
    difference = int(np.abs(rendered[lo:hi] - reference[lo - start:hi - start]).max()) if hi > lo else None
    return start, difference


def analyse(rendered, references):
    """Samples inserted (+) or lost (-) at each joint between consecutive tracks, samples
    before the first, and the largest sample difference once aligned."""
    starts, differences = zip(*(find_start(rendered, reference) for reference in references))
    joints = []
    for index in range(1, len(references)):
        if starts[index] is None or starts[index - 1] is None:
            joints.append(None)
        else:
            joints.append(starts[index] - (starts[index - 1] + len(references[index - 1])))
    return joints, starts[0], max((d for d in differences if d is not None), default=None)


def self_check(references):
    """The analysis must read renderings damaged on purpose right, or nothing it says counts."""
    a, b, c = references
    cases = [
        (np.concatenate([a, b, c]), [0, 0], 0),
        (np.concatenate([a, np.zeros(1105, np.int32), b, c]), [1105, 0], 0),
        (np.concatenate([a, b[57:], c]), [-57, 0], 0),
        (np.concatenate([a, b, c[100:]]), [0, -100], 0),
        (np.concatenate([np.zeros(2112, np.int32), a, b, np.zeros(1, np.int32), c]), [0, 1], 2112),
    ]
    for rendered, joints, leading in cases:
        found = analyse(rendered, references)
        assert found[0] == joints and found[1] == leading, (joints, leading, found)


def cmd_gapless(impl, folder, set_name, repetition):
    prefix, extensions = GAPLESS_SETS[set_name]
    tracks = [f"{folder}/{prefix}{index}.{extension}" for index, extension in enumerate(extensions)]
    references = [read_wav(f"{track}.ref.wav")[0] for track in tracks]
    self_check(references)

    # 1. The samples: rendered as fast as the pipeline goes into a WAV file (the sink does
    # not sync: a free-running render is where a gap, an overlap or a lost sample shows).
    output = f"{folder}/render-gapless-{impl}-{set_name}-{repetition}.wav"
    player = Player(impl, f"audioconvert ! audioresample ! {RENDER_CAPS} ! wavenc ! filesink location={output}")
    player.pb.set_property("uri", uri(tracks[0]))
    player.next_uris = [uri(track) for track in tracks[1:]]
    player.pb.set_state(Gst.State.PLAYING)
    message = player.wait(Gst.MessageType.EOS | Gst.MessageType.ERROR, 30)
    ended = Gst.MessageType.get_name(message.type) if message else None
    if message is not None and message.type == Gst.MessageType.ERROR:
        error, debug = message.parse_error()
        ended = f"error from {message.src.get_path_string()}: {error.message} ({debug})"
    player.pb.set_state(Gst.State.NULL)
    rendered, header_complete = read_wav(output)
    joints, leading, largest = analyse(rendered, references)
    expected_total = sum(len(reference) for reference in references)

    # 2. The events: played in real time (fakesink sync=true, as a sound card would), with
    # every message timed on the thread that posts it, in running time; the boundaries
    # between tracks are at the sums of their lengths.
    boundaries = np.cumsum([len(reference) / RATE for reference in references]).round(3).tolist()
    clocked = Player(impl, "fakesink name=clocked sync=true", sync_messages=True)
    clocked.pb.set_property("uri", uri(tracks[0]))
    clocked.next_uris = [uri(track) for track in tracks[1:]]
    clocked.pb.set_state(Gst.State.PLAYING)
    samples = []  # (running time, position): what an MPRIS Position would say, every 50 ms
    deadline = time.monotonic() + boundaries[-1] + 10
    clocked_end = None
    while time.monotonic() < deadline:
        message = clocked.wait(Gst.MessageType.EOS | Gst.MessageType.ERROR, 0.05)
        ok, position = clocked.pb.query_position(Gst.Format.TIME)
        running = clocked.running_time()
        if ok and running is not None:
            samples.append((running, position / Gst.SECOND))
        if message is not None:
            clocked_end = Gst.MessageType.get_name(message.type)
            break
    clocked.pb.set_state(Gst.State.NULL)
    # A sink repeats the title with every tag update (bit rate...): keep the changes only.
    titles = []
    for _, running, _, _, title in clocked.events("tag"):
        if not titles or titles[-1][1] != title:
            titles.append((round(running, 3) if running is not None else None, title))
    # The position 0.25 s after each boundary (0.25 expected: it counts in the new track).
    after_boundary = []
    for boundary in boundaries[:-1]:
        later = [position for running, position in samples if running >= boundary + 0.25]
        after_boundary.append(round(later[0], 3) if later else None)
    # Quaver offers the next URI once STREAM_START says the previous next one began: an
    # about-to-finish that asks for track k+1 before track k's STREAM_START finds nothing
    # offered, and playback would stop after track k.
    emitted = [rt for _, rt in clocked.about_to_finish]
    started = [e[1] for e in clocked.events("stream-start")]
    early = sum(1 for k in range(1, min(len(emitted), len(started)))
                if emitted[k] is not None and started[k] is not None and emitted[k] < started[k])
    print(json.dumps({
        "test": "gapless", "impl": impl, "set": set_name, "rep": repetition, "ended": ended,
        "joints": joints, "leading": leading, "rendered": len(rendered), "expected": expected_total,
        "length_error": len(rendered) - expected_total, "max_difference": largest,
        "codec_length_error": [len(reference) - count for reference, count in
                               zip(references, GAPLESS_PARTS if prefix == "part" else SHORT_PARTS)],
        "header_complete": header_complete,
        "clocked_ended": clocked_end, "boundaries_s": boundaries,
        "about_to_finish_rt": [round(rt, 3) if rt is not None else None for _, rt in clocked.about_to_finish],
        "stream_start_rt": [round(e[1], 3) if e[1] is not None else None for e in clocked.events("stream-start")],
        "async_done": len(clocked.events("async-done")), "asks_before_stream_start": early,
        "titles": titles,
        "position_0.25s_after_boundary": after_boundary,
        "errors": [e[4] for e in clocked.events("error")],
        "loadavg": loadavg(),
    }))


# MARK: - rate


def dominant_frequency(samples):
    """The strongest frequency in the middle of `samples`: FFT of a Hann-windowed stretch of
    65536 samples, refined between bins by a parabola through the log magnitudes."""
    count = min(65536, len(samples) // 2)
    middle = len(samples) // 2
    stretch = samples[middle - count // 2: middle + count // 2].astype(np.float64)
    spectrum = np.abs(np.fft.rfft(stretch * np.hanning(len(stretch))))
    peak = int(np.argmax(spectrum[1:-1])) + 1
    a, b, c = np.log(spectrum[peak - 1:peak + 2] + 1e-12)
    offset = 0.5 * (a - c) / (a - 2 * b + c)
    return (peak + offset) * RATE / len(stretch)


def seek_flags():
    return Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE


def cmd_rate(impl, folder, rate):
    tone = f"{folder}/tone.flac"
    source_samples = 8 * RATE // 1024 * 1024
    # 1. Quaver's way to start at a rate: preroll paused, seek to 0 with the rate, then play.
    # Rendered without sync, so it runs as fast as it decodes; the length and the pitch of
    # what comes out say whether the rate applied and the pitch was kept.
    output = f"{folder}/render-rate-{impl}-{rate}.wav"
    player = Player(impl, f"audioconvert ! audioresample ! {RENDER_CAPS} ! wavenc ! filesink location={output}")
    player.pb.set_property("uri", uri(tone))
    player.pb.set_state(Gst.State.PAUSED)
    prerolled = player.wait(Gst.MessageType.ASYNC_DONE | Gst.MessageType.ERROR, 5)
    began = time.monotonic()
    accepted = player.pb.seek(rate, Gst.Format.TIME, seek_flags(), Gst.SeekType.SET, 0, Gst.SeekType.NONE, -1)
    done = player.wait(Gst.MessageType.ASYNC_DONE | Gst.MessageType.ERROR, 5)
    paused_seek_ms = (time.monotonic() - began) * 1000
    player.pb.set_state(Gst.State.PLAYING)
    ended = player.wait(Gst.MessageType.EOS | Gst.MessageType.ERROR, 30)
    player.pb.set_state(Gst.State.NULL)
    rendered, _ = read_wav(output)
    frequency = dominant_frequency(rendered) if len(rendered) > 4096 else None

    # 2. Changing the rate while playing, in real time (fakesink sync=true): the seek's own
    # time, the time to ASYNC_DONE, the time until the first buffer of the new segment
    # reaches the sink, and how fast the position then moves against the wall clock.
    live = Player(impl, "fakesink name=out sync=true")
    sink_pad = live.sink.get_by_name("out").get_static_pad("sink")
    first_after = {}

    def probe(_pad, info):
        # The flushing seek's new segment, then the first buffer after it.
        if "seek" not in first_after:
            return Gst.PadProbeReturn.OK
        if info.type & Gst.PadProbeType.EVENT_DOWNSTREAM:
            event = info.get_event()
            if event.type == Gst.EventType.SEGMENT and "segment" not in first_after:
                segment = event.parse_segment()
                first_after["segment"] = time.monotonic()
                first_after["segment_rates"] = (segment.rate, segment.applied_rate)
        elif "segment" in first_after and "buffer" not in first_after:
            first_after["buffer"] = time.monotonic()
        return Gst.PadProbeReturn.OK

    sink_pad.add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_DOWNSTREAM, probe)
    live.pb.set_property("uri", uri(tone))
    live.pb.set_state(Gst.State.PLAYING)
    live.wait(Gst.MessageType.ASYNC_DONE, 5)
    time.sleep(1.0)
    _, position = live.pb.query_position(Gst.Format.TIME)
    first_after["seek"] = began = time.monotonic()
    live_accepted = live.pb.seek(rate, Gst.Format.TIME, seek_flags(), Gst.SeekType.SET, position, Gst.SeekType.NONE, -1)
    returned = time.monotonic()
    live_done = live.wait(Gst.MessageType.ASYNC_DONE | Gst.MessageType.ERROR, 5)
    async_done = time.monotonic()
    time.sleep(0.3)
    _, p1 = live.pb.query_position(Gst.Format.TIME)
    w1 = time.monotonic()
    time.sleep(1.5)
    _, p2 = live.pb.query_position(Gst.Format.TIME)
    w2 = time.monotonic()
    live.pb.set_state(Gst.State.NULL)
    print(json.dumps({
        "test": "rate", "impl": impl, "rate": rate,
        "prerolled": prerolled is not None and prerolled.type == Gst.MessageType.ASYNC_DONE,
        "paused_seek_accepted": accepted,
        "paused_seek_done": done is not None and done.type == Gst.MessageType.ASYNC_DONE,
        "paused_seek_ms": round(paused_seek_ms, 1),
        "ended": Gst.MessageType.get_name(ended.type) if ended else None,
        "rendered_samples": len(rendered), "expected_samples": round(source_samples / rate),
        "length_ratio": round(len(rendered) / (source_samples / rate), 4),
        "frequency_hz": round(frequency, 2) if frequency else None,
        "live_seek_accepted": live_accepted,
        "live_seek_call_ms": round((returned - began) * 1000, 1),
        "live_async_done_ms": round((async_done - began) * 1000, 1) if live_done is not None and live_done.type == Gst.MessageType.ASYNC_DONE else None,
        "live_first_buffer_ms": round((first_after["buffer"] - began) * 1000, 1) if "buffer" in first_after else None,
        "sink_segment_rate_applied_rate": first_after.get("segment_rates"),
        "live_speed": round((p2 - p1) / Gst.SECOND / (w2 - w1), 3),
        "loadavg": loadavg(),
    }))


# MARK: - video


def cmd_video(impl, folder, name):
    player = Player(impl, "fakesink sync=false", record_elements=True)
    player.pb.set_property("uri", uri(f"{folder}/{name}"))
    cpu, began = cpu_seconds(), time.monotonic()
    player.pb.set_state(Gst.State.PLAYING)
    ended = player.wait(Gst.MessageType.EOS | Gst.MessageType.ERROR, 60)
    cpu, wall = cpu_seconds() - cpu, time.monotonic() - began
    present = player.factories()
    threads = thread_count()
    player.pb.set_state(Gst.State.NULL)
    video_decoders = sorted({name for name in player.created if is_video_decoder(name)})
    print(json.dumps({
        "test": "video", "impl": impl, "file": name,
        "ended": Gst.MessageType.get_name(ended.type) if ended else None,
        "cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "threads": threads,
        "video_decoders": video_decoders,
        "created": sorted(set(player.created)), "present_at_eos": sorted(set(present)),
        "select_stream_calls": player.select_calls, "loadavg": loadavg(),
    }))


# MARK: - http


def cmd_http(impl, url, seconds):
    player = Player(impl, "fakesink name=out sync=true", sync_messages=True, record_elements=True)
    sink_pad = player.sink.get_by_name("out").get_static_pad("sink")
    first = {}

    def probe(_pad, _info):
        first.setdefault("buffer", player.wall())
        return Gst.PadProbeReturn.REMOVE

    sink_pad.add_probe(Gst.PadProbeType.BUFFER, probe)
    player.pb.set_property("uri", url)
    player.t0 = time.monotonic()
    player.pb.set_state(Gst.State.PLAYING)
    # As Quaver's Player does: paused while the buffer fills (below 100 %), playing at 100 %.
    deadline = time.monotonic() + seconds
    buffering = False
    pauses = 0
    while time.monotonic() < deadline:
        message = player.wait(Gst.MessageType.ERROR | Gst.MessageType.EOS | Gst.MessageType.BUFFERING,
                              deadline - time.monotonic())
        if message is None or message.type != Gst.MessageType.BUFFERING:
            break
        percent = message.parse_buffering()
        if percent < 100 and not buffering:
            buffering = True
            pauses += 1
            player.pb.set_state(Gst.State.PAUSED)
        elif percent >= 100 and buffering:
            buffering = False
            player.pb.set_state(Gst.State.PLAYING)
    player.pb.set_state(Gst.State.NULL)
    playing = [e[0] for e in player.events("state-changed") if e[4] == "paused->playing"]
    tags = player.events("tag")
    messages = player.events("buffering")
    print(json.dumps({
        "test": "http", "impl": impl, "url": url.split("/", 3)[-1], "seconds": seconds,
        "first_buffer_s": round(first["buffer"], 3) if "buffer" in first else None,
        "first_playing_s": round(playing[0], 3) if playing else None, "buffering_pauses": pauses,
        "titles": sorted({e[4] for e in tags}), "first_title_s": round(tags[0][0], 3) if tags else None,
        "tag_sources": sorted({e[3].rsplit("/", 1)[-1].split(":")[0] for e in tags}),
        "buffering_messages": len(messages),
        "buffering_sources": sorted({e[3].rsplit("/", 1)[-1] for e in messages}),
        "first_buffering_100_s": next((round(e[0], 3) for e in messages if e[4] == 100), None),
        "stream_start": len(player.events("stream-start")),
        "errors": [e[4] for e in player.events("error")],
        "created": sorted(set(player.created)),
        "loadavg": loadavg(),
    }))


# MARK: - storm


def cmd_storm(impl, folder, seconds, teardown):
    """A new URI 20 times a second for `seconds`: to READY (`teardown` ready: NULL only
    after an error, as Quaver does) or always to NULL (`teardown` null), uri, PLAYING, each
    call guarded; the next URI is offered from about-to-finish, so gapless switches of the
    half-second tracks race the loads, as they do in Quaver."""
    tracks = [uri(path) for path in media_list(folder, "storm")]
    sink = "fakesink sync=true"
    guarded = Guarded()
    player = Player(impl, sink)
    abandoned = []  # stuck pipelines, kept: freeing one would wait for the stuck call
    counts = {"loads": 0, "stuck": 0, "stuck_in": {}, "errors": {}, "async_done": 0, "stream_start": 0,
              "eos": 0, "about_to_finish": 0}
    failed = False
    period = 0.05
    began = time.monotonic()
    next_at = began
    index = 0
    while time.monotonic() - began < seconds:
        # What the bus said since the previous load (Quaver reads it on its main queue).
        while (message := player.bus.pop()) is not None:
            if message.type == Gst.MessageType.ERROR:
                error, _ = message.parse_error()
                counts["errors"][error.message] = counts["errors"].get(error.message, 0) + 1
                failed = True
            elif message.type == Gst.MessageType.ASYNC_DONE:
                counts["async_done"] += 1
            elif message.type == Gst.MessageType.STREAM_START:
                counts["stream_start"] += 1
            elif message.type == Gst.MessageType.EOS:
                counts["eos"] += 1
        steps = (("teardown", player.pb.set_state, Gst.State.NULL if failed or teardown == "null" else Gst.State.READY),
                 ("uri", player.pb.set_property, "uri", tracks[index % len(tracks)]),
                 ("play", player.pb.set_state, Gst.State.PLAYING))
        failed = False
        player.next_uris = [tracks[(index + 1) % len(tracks)]]
        for step, function, *arguments in steps:
            if guarded(function, *arguments) == "stuck":
                if counts["stuck"] == 0 and os.environ.get("PBBENCH_BACKTRACE"):
                    # Where every thread waits (is it GStreamer's locks, or this harness's GIL?).
                    with open(os.environ["PBBENCH_BACKTRACE"], "w") as out:
                        subprocess.run(["gdb", "-p", str(os.getpid()), "-batch", "-ex", "thread apply all bt"],
                                       stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                counts["stuck"] += 1
                counts["stuck_in"][step] = counts["stuck_in"].get(step, 0) + 1
                counts["about_to_finish"] += len(player.about_to_finish)
                abandoned.append(player)
                player = Player(impl, sink)
                break
        counts["loads"] += 1
        index += 1
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))
    elapsed = time.monotonic() - began
    counts["about_to_finish"] += len(player.about_to_finish)
    # Does the last pipeline still play? One more load, then ASYNC_DONE within the limit.
    player.bus.set_flushing(True)
    player.bus.set_flushing(False)
    final = "stuck"
    if guarded(player.pb.set_state, Gst.State.NULL) != "stuck" and \
            guarded(player.pb.set_property, "uri", tracks[0]) != "stuck" and \
            guarded(player.pb.set_state, Gst.State.PLAYING) != "stuck":
        message = player.wait(Gst.MessageType.ASYNC_DONE | Gst.MessageType.ERROR, STUCK_LIMIT)
        final = Gst.MessageType.get_name(message.type) if message else "no async-done"
    durations = sorted(guarded.durations)
    print(json.dumps({
        "test": "storm", "impl": impl, "teardown": teardown, "seconds": round(elapsed, 1), **counts, "final_load": final,
        "call_ms_p50": round(durations[len(durations) // 2] * 1000, 2) if durations else None,
        "call_ms_p99": round(durations[int(len(durations) * 0.99)] * 1000, 2) if durations else None,
        "call_ms_max": round(durations[-1] * 1000, 2) if durations else None,
        "threads_at_end": thread_count(), "rss_kib_at_end": rss_kib(), "loadavg": loadavg(),
    }), flush=True)
    os._exit(0)  # a stuck pipeline's threads would keep the process alive


# MARK: - memory


def cmd_memory(impl, folder, loads):
    """Track changes as Quaver makes them (READY, uri, PLAYING, until ASYNC_DONE) on
    two-second tracks, RSS sampled every 100 loads after 20 warm-up loads, with the time
    each 100 loads took and the elements the pipeline holds at the end."""
    tracks = [uri(path) for path in media_list(folder, "load")]
    player = Player(impl, "fakesink sync=true")
    guarded = Guarded()
    samples = []
    threads = []
    marks = []  # when each sample was taken: does a load get slower as they pile up?
    stuck = 0
    timeouts = 0
    began = time.monotonic()
    for index in range(loads + 20):
        if index >= 20 and (index - 20) % 100 == 0:
            samples.append(rss_kib())
            marks.append(time.monotonic())
        results = [guarded(player.pb.set_state, Gst.State.READY),
                   guarded(player.pb.set_property, "uri", tracks[index % len(tracks)]),
                   guarded(player.pb.set_state, Gst.State.PLAYING)]
        if "stuck" in results:
            stuck += 1
            player = Player(impl, "fakesink sync=true")
            continue
        if player.wait(Gst.MessageType.ASYNC_DONE | Gst.MessageType.ERROR, STUCK_LIMIT) is None:
            timeouts += 1
        if index % 100 == 0:
            threads.append(thread_count())
    samples.append(rss_kib())
    marks.append(time.monotonic())
    # Elements inside the pipeline now, and the ones more than once: what accumulates.
    names = [factory_name(element) for element in items(player.pb.iterate_recurse())]
    repeated = {name: names.count(name) for name in set(names) if names.count(name) > 2}
    print(json.dumps({
        "test": "memory", "impl": impl, "loads": loads, "rss_kib": samples,
        "growth_kib": samples[-1] - samples[0], "per_load_bytes": round((samples[-1] - samples[0]) * 1024 / loads),
        "stuck": stuck, "no_async_done": timeouts, "seconds": round(time.monotonic() - began, 1),
        "ms_per_load_per_100": [round((b - a) * 10, 1) for a, b in zip(marks, marks[1:])],
        "threads": threads, "elements_at_end": len(names), "repeated_elements_at_end": repeated,
        "threads_at_end": thread_count(), "loadavg": loadavg(),
    }), flush=True)
    os._exit(0)


def main():
    command, *arguments = sys.argv[1:]
    if command == "media":
        make_media(arguments[0])
    elif command == "gapless":
        cmd_gapless(arguments[0], arguments[1], arguments[2], int(arguments[3]))
    elif command == "rate":
        cmd_rate(arguments[0], arguments[1], float(arguments[2]))
    elif command == "video":
        cmd_video(*arguments[:3])
    elif command == "http":
        cmd_http(arguments[0], arguments[1], float(arguments[2]))
    elif command == "storm":
        cmd_storm(arguments[0], arguments[1], float(arguments[2]), arguments[3] if len(arguments) > 3 else "ready")
    elif command == "memory":
        cmd_memory(arguments[0], arguments[1], int(arguments[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
