//! The timing model: waves in CU slots, instructions through each CU's TD, node fetches
//! through L0 (per CU), L1 (per shader array), L2 and DRAM, and the shader's ALU time
//! between instructions.
//!
//! The rules (docs/memory-model.md says the same for users):
//!
//! - Wave `w` of a dispatch runs on CU `w mod CUs`; CU `c` is in shader array
//!   `floor(c / CUs per array)`. A CU holds `SIMDs x waves per SIMD` waves; a wave takes
//!   the first free slot of its CU, in wave order.
//! - A wave issues its instructions in order. An instruction enters its CU's TD queue
//!   (first come, first served). The TD accepts one TD lane a clock: the k-th TD lane of an
//!   instruction that starts at `s` is accepted at `s + k`, and is tested one clock later.
//!   Lanes that load an instance or procedural node for the shader take no TD clock; their
//!   loads leave at `s`.
//! - When the TD starts an instruction, its lanes' fetches access the caches in lane order
//!   (one access per line a node touches). This is the fetch trace's order. A line is looked
//!   up in L0, then L1, then L2; a miss allocates at each level it missed.
//! - A lane's data arrives after the hit latency of every level it looked in (plus DRAM's
//!   after an L2 miss), and after any wait for the links it crossed: each link moves
//!   `bandwidth` bytes a clock, one line after the other, in the order requests reach it.
//!   An idle link adds no delay.
//! - The instruction completes when its last lane's data is there; the wave spends the
//!   shader's ALU clocks, then issues its next instruction (or ends, freeing its slot).
//! - Dispatches run one after the other; caches stay warm between them.
//!
//! Times are in shader clocks (f64).

use super::cache::Cache;
use super::fetch::{fetch_span, Dispatch};
use super::machine::Machine;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::Write;

/// Latency histogram buckets: one per clock up to this, then one overflow bucket.
const LATENCY_BUCKETS: usize = 1 << 16;

/// Accesses and hits of one cache level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LevelStats {
    pub accesses: u64,
    pub hits: u64,
}

impl LevelStats {
    /// Hits / accesses (0 without accesses).
    pub fn hit_rate(&self) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            self.hits as f64 / self.accesses as f64
        }
    }
}

/// What limited a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The TDs were busy most of the time.
    Td,
    /// A link ran near its bandwidth (named by [`MemoryStats::busiest_link`]).
    Bandwidth,
    /// Neither: waves waited on latency (too few waves, or too little work per fetch, to
    /// hide it).
    Latency,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Td => "TD",
            Bound::Bandwidth => "bandwidth",
            Bound::Latency => "latency",
        }
    }
}

/// What the model measured over all dispatches run so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryStats {
    pub machine: String,
    pub rays: u64,
    pub waves: u64,
    pub instructions: u64,
    /// Node fetches (lanes that read a node).
    pub fetches: u64,
    /// Bytes of those nodes.
    pub fetch_bytes: u64,
    pub l0: LevelStats,
    pub l1: LevelStats,
    pub l2: LevelStats,
    /// Bytes read from DRAM (a line per L2 miss).
    pub dram_bytes: u64,
    /// TD lanes (TD clocks), all CUs.
    pub td_clocks: u64,
    /// Modelled time of all dispatches, in shader clocks.
    pub time_clocks: f64,
    /// Summed over CUs: clocks from each dispatch's start to the CU's last wave's end.
    pub cu_clocks: f64,
    /// Of `cu_clocks`: the TD accepting lanes.
    pub cu_td_clocks: f64,
    /// Of `cu_clocks`: the TD idle while waves waited on memory.
    pub cu_memory_clocks: f64,
    /// Of `cu_clocks`: the TD idle while waves ran shader ALU.
    pub cu_alu_clocks: f64,
    /// Summed over instructions: clocks from entering the TD queue to completion.
    pub latency_sum: f64,
    /// The 99th percentile of that latency (clocks).
    pub latency_p99: f64,
    /// Busy clocks of the busiest link of each kind: `[L0->L1, L1->L2, L2->fabric, DRAM]`.
    pub link_busy_clocks: [f64; 4],
    /// The bound of the run.
    pub bound: Option<Bound>,
    /// The link that was busiest relative to the time, when the bound is bandwidth.
    pub busiest_link: Option<&'static str>,
    #[serde(skip)]
    latency_histogram: Vec<u64>,
    #[serde(skip)]
    clock_hz: f64,
}

impl MemoryStats {
    /// Modelled rays per second.
    pub fn rays_per_s(&self) -> f64 {
        if self.time_clocks <= 0.0 {
            0.0
        } else {
            self.rays as f64 / (self.time_clocks / self.clock_hz)
        }
    }

    /// Modelled time in seconds.
    pub fn seconds(&self) -> f64 {
        if self.clock_hz > 0.0 {
            self.time_clocks / self.clock_hz
        } else {
            0.0
        }
    }

    /// DRAM bytes per ray.
    pub fn dram_bytes_per_ray(&self) -> f64 {
        self.dram_bytes as f64 / self.rays.max(1) as f64
    }

    /// Mean instruction latency in clocks.
    pub fn latency_mean(&self) -> f64 {
        self.latency_sum / self.instructions.max(1) as f64
    }

    /// The frame time, in ms, of `rays` rays at the modelled rate.
    pub fn frame_ms(&self, rays: u64) -> f64 {
        let r = self.rays_per_s();
        if r > 0.0 {
            rays as f64 / r * 1e3
        } else {
            0.0
        }
    }

    /// `part` of the CU time, in percent.
    pub fn cu_share(&self, part: f64) -> f64 {
        if self.cu_clocks > 0.0 {
            100.0 * part / self.cu_clocks
        } else {
            0.0
        }
    }

    fn finish_percentile(&mut self) {
        let total: u64 = self.latency_histogram.iter().sum();
        if total == 0 {
            self.latency_p99 = 0.0;
            return;
        }
        let target = (total as f64 * 0.99).ceil() as u64;
        let mut seen = 0;
        for (clocks, &n) in self.latency_histogram.iter().enumerate() {
            seen += n;
            if seen >= target {
                self.latency_p99 = clocks as f64;
                return;
            }
        }
    }
}

/// A time in the event heap, ordered as a min-heap entry (earliest first; ties by CU).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Event {
    time: f64,
    id: u32,
}

impl Eq for Event {}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then_with(|| other.id.cmp(&self.id))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A link between two levels: when it is next free, and how long it was busy.
#[derive(Clone, Copy, Debug, Default)]
struct Link {
    free: f64,
    busy: f64,
}

impl Link {
    /// A transfer of `clocks` requested at `t`: when it starts.
    #[inline]
    fn reserve(&mut self, t: f64, clocks: f64) -> f64 {
        let start = if self.free > t { self.free } else { t };
        self.free = start + clocks;
        self.busy += clocks;
        start
    }
}

/// What one dispatch counted, kept apart from [`MemoryStats`] so that the fetch loop's
/// counts stay in registers.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    fetches: u64,
    fetch_bytes: u64,
    l0_accesses: u64,
    l0_hits: u64,
    l1_accesses: u64,
    l1_hits: u64,
    l2_accesses: u64,
    l2_hits: u64,
    dram_lines: u64,
}

/// One CU's state within a dispatch.
#[derive(Clone, Debug, Default)]
struct Cu {
    td_free: f64,
    /// Waves waiting for the TD: (arrival, wave), earliest first.
    queue: BinaryHeap<Event>,
    /// The next of its waves to take a slot (k: wave `cu + k CUs`).
    next_wave: u64,
    end: f64,
    td: f64,
    memory_wait: f64,
    alu: f64,
}

/// The memory model: the machine, its caches and links, and what it measured.
pub struct MemoryModel {
    machine: Machine,
    l0: Vec<Cache>,
    l1: Vec<Cache>,
    l2: Cache,
    l0_link: Vec<Link>,
    l1_link: Vec<Link>,
    l2_link: Link,
    dram_link: Link,
    /// Link transfer clocks of one line.
    line_clocks: [f64; 4],
    /// Hit latency of L0, L1 and L2, clocks.
    latency: [f64; 3],
    dram_latency: f64,
    time: f64,
    stats: MemoryStats,
    trace_buffer: Vec<u8>,
}

impl std::fmt::Debug for MemoryModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryModel")
            .field("machine", &self.machine.name)
            .field("time", &self.time)
            .finish()
    }
}

impl MemoryModel {
    /// A model of `machine` (checked) with cold caches at time 0.
    pub fn new(machine: &Machine) -> MemoryModel {
        let m = machine.clone();
        let cache = |l: &super::machine::CacheLevel| Cache::new(l.sets(), l.ways, l.line_bytes);
        let stats = MemoryStats {
            machine: m.name.clone(),
            latency_histogram: vec![0; LATENCY_BUCKETS + 1],
            clock_hz: m.clock_hz(),
            ..MemoryStats::default()
        };
        MemoryModel {
            l0: vec![cache(&m.l0); m.compute_units as usize],
            l1: vec![cache(&m.l1); m.shader_arrays as usize],
            l2: cache(&m.l2),
            l0_link: vec![Link::default(); m.compute_units as usize],
            l1_link: vec![Link::default(); m.shader_arrays as usize],
            l2_link: Link::default(),
            dram_link: Link::default(),
            line_clocks: [
                m.l0.line_bytes as f64 / m.l0.bandwidth_to_above_bytes_per_clock,
                m.l1.line_bytes as f64 / m.l1.bandwidth_to_above_bytes_per_clock,
                m.l2.line_bytes as f64 / m.l2.bandwidth_to_above_bytes_per_clock,
                m.l2.line_bytes as f64 / m.dram_bytes_per_clock(),
            ],
            latency: [
                m.l0.hit_latency_clocks as f64,
                m.l1.hit_latency_clocks as f64,
                m.l2.hit_latency_clocks as f64,
            ],
            dram_latency: m.dram_latency_clocks(),
            time: 0.0,
            stats,
            trace_buffer: Vec::new(),
            machine: m,
        }
    }

    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Runs `dispatch` after the dispatches before it. With `ray_clocks` (one entry per ray
    /// of the dispatch), adds each ray's modelled clocks: for every instruction its lane
    /// took part in, the instruction's latency and the ALU clocks after it.
    pub fn run(&mut self, dispatch: &Dispatch, ray_clocks: Option<&mut [f64]>) {
        self.run_traced(dispatch, ray_clocks, None)
            .expect("no fetch trace, no I/O");
    }

    /// [`Self::run`], writing every node fetch to `trace` in the order the model makes
    /// them (the order the caches see them): 16 bytes a fetch, little-endian: u64 byte
    /// address within the image, u32 bytes, u16 CU, u16 0.
    pub fn run_traced(
        &mut self,
        dispatch: &Dispatch,
        mut ray_clocks: Option<&mut [f64]>,
        mut trace: Option<&mut dyn Write>,
    ) -> std::io::Result<()> {
        let cus = self.machine.compute_units as u64;
        let slots = self.machine.wave_slots_per_cu() as u64;
        let alu = self.machine.alu_clocks_per_step as f64;
        let cus_per_array = self.machine.cus_per_array;
        let waves = dispatch.waves;
        let width = dispatch.width as u64;
        // Each wave's instructions: `starts[w]..starts[w + 1]`.
        let mut starts = vec![0u32; waves as usize + 1];
        for i in &dispatch.instrs {
            starts[i.wave as usize + 1] += 1;
        }
        for w in 0..waves as usize {
            starts[w + 1] += starts[w];
        }
        let mut next_instr: Vec<u32> = starts[..waves as usize].to_vec();
        let t0 = self.time;
        let mut cu_state = vec![
            Cu {
                td_free: t0,
                end: t0,
                ..Cu::default()
            };
            cus as usize
        ];
        let mut heap = BinaryHeap::with_capacity(cus as usize);
        let mut n = Counts::default();
        // Fills CU c's free slots at time t (one slot freed, or all at the start).
        let take_wave = |cu: &mut Cu, c: u64, t: f64, next_instr: &[u32]| -> bool {
            loop {
                let w = c + cu.next_wave * cus;
                if w >= waves {
                    return false;
                }
                cu.next_wave += 1;
                // A wave without instructions (every lane rejected) ends at once.
                if next_instr[w as usize] < starts[w as usize + 1] {
                    cu.queue.push(Event {
                        time: t,
                        id: w as u32,
                    });
                    return true;
                }
            }
        };
        for (c, cu) in cu_state.iter_mut().enumerate() {
            for _ in 0..slots {
                if !take_wave(cu, c as u64, t0, &next_instr) {
                    break;
                }
            }
            if let Some(first) = cu.queue.peek() {
                heap.push(Event {
                    time: first.time.max(cu.td_free),
                    id: c as u32,
                });
            }
        }
        while let Some(Event { time: s, id: c }) = heap.pop() {
            let cu = &mut cu_state[c as usize];
            let Event {
                time: arrival,
                id: w,
            } = cu.queue.pop().expect("a CU in the heap has a wave waiting");
            let index = next_instr[w as usize] as usize;
            next_instr[w as usize] += 1;
            let instr = &dispatch.instrs[index];
            let array = (c / cus_per_array) as usize;
            let mut complete = s;
            let mut k_td = 0u32;
            let mut lanes = instr.lanes;
            for &word in instr.fetches(dispatch) {
                let lane = lanes.trailing_zeros();
                lanes &= lanes - 1;
                let on_td = (instr.td >> lane) & 1 == 1;
                let accept = if on_td {
                    k_td += 1;
                    s + (k_td - 1) as f64 + 1.0
                } else {
                    s
                };
                let (address, bytes) = fetch_span(word);
                n.fetches += 1;
                n.fetch_bytes += bytes as u64;
                if let Some(out) = trace.as_deref_mut() {
                    self.trace_buffer.extend_from_slice(&address.to_le_bytes());
                    self.trace_buffer.extend_from_slice(&bytes.to_le_bytes());
                    self.trace_buffer
                        .extend_from_slice(&(c as u16).to_le_bytes());
                    self.trace_buffer.extend_from_slice(&[0, 0]);
                    if self.trace_buffer.len() >= 1 << 16 {
                        out.write_all(&self.trace_buffer)?;
                        self.trace_buffer.clear();
                    }
                }
                let first_line = self.l0[c as usize].line_of(address);
                let last_line = self.l0[c as usize].line_of(address + bytes as u64 - 1);
                for line in first_line..last_line + 1 {
                    let ready = self.access(c as usize, array, line, accept, &mut n);
                    if ready > complete {
                        complete = ready;
                    }
                }
            }
            let n = k_td as f64;
            if k_td > 0 {
                cu.td_free = s + n;
            }
            cu.td += n;
            cu.memory_wait += (complete - (s + n)).max(0.0);
            cu.alu += alu;
            self.stats.instructions += 1;
            self.stats.td_clocks += k_td as u64;
            let latency = complete - arrival;
            self.stats.latency_sum += latency;
            let bucket = (latency.max(0.0) as usize).min(LATENCY_BUCKETS);
            self.stats.latency_histogram[bucket] += 1;
            if let Some(clocks) = ray_clocks.as_deref_mut() {
                let mut lanes = instr.lanes;
                while lanes != 0 {
                    let lane = lanes.trailing_zeros() as u64;
                    lanes &= lanes - 1;
                    if let Some(r) = clocks.get_mut((w as u64 * width + lane) as usize) {
                        *r += latency + alu;
                    }
                }
            }
            let next = complete + alu;
            if next_instr[w as usize] < starts[w as usize + 1] {
                // Hundreds of other waves' instructions run before this one's next: its
                // data is fetched into the host's cache meanwhile.
                prefetch(dispatch, next_instr[w as usize] as usize);
                cu.queue.push(Event { time: next, id: w });
            } else {
                cu.end = cu.end.max(next);
                take_wave(cu, c as u64, next, &next_instr);
            }
            if let Some(first) = cu.queue.peek() {
                heap.push(Event {
                    time: first.time.max(cu.td_free),
                    id: c,
                });
            }
            // The next instruction the loop takes: its data is wanted now.
            if let Some(top) = heap.peek() {
                if let Some(e) = cu_state[top.id as usize].queue.peek() {
                    prefetch(dispatch, next_instr[e.id as usize] as usize);
                }
            }
        }
        let end = cu_state.iter().map(|c| c.end).fold(t0, f64::max);
        for cu in &cu_state {
            let span = cu.end - t0;
            let rest = (span - cu.td).max(0.0);
            let waits = cu.memory_wait + cu.alu;
            self.stats.cu_clocks += span;
            self.stats.cu_td_clocks += cu.td;
            if waits > 0.0 {
                self.stats.cu_memory_clocks += rest * cu.memory_wait / waits;
                self.stats.cu_alu_clocks += rest * cu.alu / waits;
            }
        }
        let st = &mut self.stats;
        st.fetches += n.fetches;
        st.fetch_bytes += n.fetch_bytes;
        st.l0.accesses += n.l0_accesses;
        st.l0.hits += n.l0_hits;
        st.l1.accesses += n.l1_accesses;
        st.l1.hits += n.l1_hits;
        st.l2.accesses += n.l2_accesses;
        st.l2.hits += n.l2_hits;
        st.dram_bytes += n.dram_lines * self.machine.l2.line_bytes as u64;
        self.time = end;
        self.stats.time_clocks = end;
        self.stats.rays += dispatch.rays;
        self.stats.waves += waves;
        if let Some(out) = trace {
            out.write_all(&self.trace_buffer)?;
            self.trace_buffer.clear();
        }
        Ok(())
    }

    /// Looks `line` up for CU `cu` (in shader array `array`) at `t`: when its data is there.
    /// Counts into `n` (a local of the caller's loop, kept in registers).
    #[inline(always)]
    fn access(&mut self, cu: usize, array: usize, line: u64, t: f64, n: &mut Counts) -> f64 {
        let mut t = t + self.latency[0];
        n.l0_accesses += 1;
        if self.l0[cu].access(line) {
            n.l0_hits += 1;
            return t;
        }
        t = self.l0_link[cu].reserve(t, self.line_clocks[0]) + self.latency[1];
        n.l1_accesses += 1;
        if self.l1[array].access(line) {
            n.l1_hits += 1;
            return t;
        }
        t = self.l1_link[array].reserve(t, self.line_clocks[1]) + self.latency[2];
        n.l2_accesses += 1;
        if self.l2.access(line) {
            n.l2_hits += 1;
            return t;
        }
        n.dram_lines += 1;
        t = self.l2_link.reserve(t, self.line_clocks[2]);
        t = self.dram_link.reserve(t, self.line_clocks[3]);
        t + self.dram_latency
    }

    /// What the model measured so far (the bound decided over all dispatches).
    pub fn finish(&self) -> MemoryStats {
        let mut stats = self.stats.clone();
        stats.finish_percentile();
        let max = |links: &[Link]| links.iter().map(|l| l.busy).fold(0.0, f64::max);
        stats.link_busy_clocks = [
            max(&self.l0_link),
            max(&self.l1_link),
            self.l2_link.busy,
            self.dram_link.busy,
        ];
        let time = stats.time_clocks.max(f64::MIN_POSITIVE);
        let td_use = stats.cu_td_clocks / (self.machine.compute_units as f64 * time);
        let names = ["L0-L1 link", "L1-L2 link", "L2-fabric link", "DRAM"];
        let (link, link_use) = stats
            .link_busy_clocks
            .iter()
            .enumerate()
            .map(|(k, b)| (k, b / time))
            .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        stats.bound = Some(if td_use >= BOUND_USE && td_use >= link_use {
            Bound::Td
        } else if link_use >= BOUND_USE {
            stats.busiest_link = Some(names[link]);
            Bound::Bandwidth
        } else {
            Bound::Latency
        });
        stats
    }
}

/// The memory model's figures as reports print them (and their JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub machine: String,
    pub rays: u64,
    /// Node fetches (one per lane that read a node) and their bytes.
    pub fetches: u64,
    pub fetch_bytes: u64,
    /// Per level: accesses (one per line a fetch touches, at each level it reaches), hits
    /// and their ratio.
    pub l0_accesses: u64,
    pub l0_hits: u64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub l0_hit_rate: f64,
    pub l1_accesses: u64,
    pub l1_hits: u64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub l1_hit_rate: f64,
    pub l2_accesses: u64,
    pub l2_hits: u64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub l2_hit_rate: f64,
    pub dram_bytes: u64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub dram_bytes_per_ray: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub instruction_latency_mean_clocks: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub instruction_latency_p99_clocks: f64,
    /// Shares of the CUs' time, in percent: TD accepting lanes, TD idle with waves waiting
    /// on memory, TD idle with waves in shader ALU.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub cu_td_percent: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub cu_memory_percent: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub cu_alu_percent: f64,
    /// `TD`, `bandwidth` or `latency`.
    #[serde(deserialize_with = "crate::shard::de::interned")]
    pub bound: crate::shard::de::Name,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default, deserialize_with = "crate::shard::de::interned_opt")]
    pub busiest_link: Option<crate::shard::de::Name>,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub modelled_seconds: f64,
    /// Rays per second with the memory model.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub modelled_rays_per_second: f64,
    /// The TD-only figure of the same run (one TD clock per lane, nothing else), beside it.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub td_only_rays_per_second: f64,
    /// A 1920 x 1080 frame of one ray a pixel at the modelled rate, in ms.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub frame_ms_1080p: f64,
}

impl MemoryReport {
    /// The report of `stats`, beside the TD-only rate of the same run.
    pub fn new(stats: &MemoryStats, td_only_rays_per_second: f64) -> MemoryReport {
        MemoryReport {
            machine: stats.machine.clone(),
            rays: stats.rays,
            fetches: stats.fetches,
            fetch_bytes: stats.fetch_bytes,
            l0_accesses: stats.l0.accesses,
            l0_hits: stats.l0.hits,
            l0_hit_rate: stats.l0.hit_rate(),
            l1_accesses: stats.l1.accesses,
            l1_hits: stats.l1.hits,
            l1_hit_rate: stats.l1.hit_rate(),
            l2_accesses: stats.l2.accesses,
            l2_hits: stats.l2.hits,
            l2_hit_rate: stats.l2.hit_rate(),
            dram_bytes: stats.dram_bytes,
            dram_bytes_per_ray: stats.dram_bytes_per_ray(),
            instruction_latency_mean_clocks: stats.latency_mean(),
            instruction_latency_p99_clocks: stats.latency_p99,
            cu_td_percent: stats.cu_share(stats.cu_td_clocks),
            cu_memory_percent: stats.cu_share(stats.cu_memory_clocks),
            cu_alu_percent: stats.cu_share(stats.cu_alu_clocks),
            bound: stats.bound.unwrap_or(Bound::Latency).name(),
            busiest_link: stats.busiest_link,
            modelled_seconds: stats.seconds(),
            modelled_rays_per_second: stats.rays_per_s(),
            td_only_rays_per_second,
            frame_ms_1080p: stats.frame_ms(1920 * 1080),
        }
    }

    /// The report's lines for a text table.
    pub fn table(&self) -> String {
        let pct = |r: f64| format!("{:.1} %", 100.0 * r);
        let mut s = String::new();
        use std::fmt::Write as _;
        let _ = writeln!(s, "memory model ({}):", self.machine);
        let _ = writeln!(
            s,
            "  hit rate    L0 {} of {} accesses, L1 {} of {}, L2 {} of {}",
            pct(self.l0_hit_rate),
            self.l0_accesses,
            pct(self.l1_hit_rate),
            self.l1_accesses,
            pct(self.l2_hit_rate),
            self.l2_accesses
        );
        let _ = writeln!(
            s,
            "  DRAM        {:.1} bytes/ray ({} bytes)",
            self.dram_bytes_per_ray, self.dram_bytes
        );
        let _ = writeln!(
            s,
            "  latency     mean {:.0} clocks, p99 {:.0} clocks (queue to completion)",
            self.instruction_latency_mean_clocks, self.instruction_latency_p99_clocks
        );
        let bound = match self.busiest_link {
            Some(link) => format!("{} ({link})", self.bound),
            None => self.bound.to_string(),
        };
        let _ = writeln!(
            s,
            "  CU time     TD {:.1} %, memory {:.1} %, ALU {:.1} %; bound: {bound}",
            self.cu_td_percent, self.cu_memory_percent, self.cu_alu_percent
        );
        let _ = writeln!(
            s,
            "  modelled    {:.3} G rays/s with memory, {:.3} G rays/s TD only; {:.2} ms a 1080p frame (1 ray/pixel)",
            self.modelled_rays_per_second / 1e9,
            self.td_only_rays_per_second / 1e9,
            self.frame_ms_1080p
        );
        s
    }
}

/// Asks the host CPU to bring instruction `index` of `dispatch` and its first fetch words
/// into its cache (a hint; nothing on other architectures).
#[inline(always)]
fn prefetch(dispatch: &Dispatch, index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        if let Some(instr) = dispatch.instrs.get(index) {
            let words = dispatch.fetches.as_ptr().wrapping_add(instr.first as usize);
            // SAFETY: prefetching is a hint that never faults, whatever the address; SSE
            // is part of every x86-64 CPU.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(instr).cast());
                _mm_prefetch::<_MM_HINT_T0>(words.cast());
                _mm_prefetch::<_MM_HINT_T0>(words.wrapping_add(16).cast());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (dispatch, index);
}

/// A resource busy this share of the time or more bounds the run (TD or a link); when none
/// is, the run is latency-bound.
pub const BOUND_USE: f64 = 0.75;

#[cfg(test)]
mod tests {
    use super::super::fetch::{Instr, FETCH_128};
    use super::super::machine::series_x;
    use super::*;

    /// A dispatch of `waves` waves of 32 lanes whose instruction `i` of wave `w` has
    /// `lanes` TD lanes fetching `block(w, i, lane)`.
    fn dispatch(
        waves: u32,
        instrs: u32,
        lanes: u32,
        block: impl Fn(u32, u32, u32) -> u32,
    ) -> Dispatch {
        let mut d = Dispatch {
            width: 32,
            rays: waves as u64 * 32,
            waves: waves as u64,
            ..Dispatch::default()
        };
        for w in 0..waves {
            for i in 0..instrs {
                let mask = if lanes == 32 {
                    u32::MAX as u64
                } else {
                    (1u64 << lanes) - 1
                };
                d.instrs.push(Instr {
                    wave: w,
                    first: d.fetches.len() as u32,
                    lanes: mask,
                    td: mask,
                });
                for l in 0..lanes {
                    d.fetches.push(block(w, i, l));
                }
            }
        }
        d
    }

    #[test]
    fn a_lane_missing_every_level_takes_the_sum_of_the_latencies_per_step() {
        let m = series_x();
        let mut model = MemoryModel::new(&m);
        // One lane, 10 steps, each at a node 1 MB after the last: a new line everywhere.
        let steps = 10;
        let d = dispatch(1, steps, 1, |_, i, _| i * (1 << 14));
        model.run(&d, None);
        let s = model.finish();
        let per_step = 1.0
            + (m.l0.hit_latency_clocks + m.l1.hit_latency_clocks + m.l2.hit_latency_clocks) as f64
            + m.dram.latency_ns * 1e-9 * m.clock_mhz as f64 * 1e6
            + m.alu_clocks_per_step as f64;
        assert_eq!(s.l0.hits + s.l1.hits + s.l2.hits, 0);
        assert!(
            (s.time_clocks - steps as f64 * per_step).abs() < 1e-6,
            "{} vs {}",
            s.time_clocks,
            steps as f64 * per_step
        );
        assert_eq!(s.bound, Some(Bound::Latency));
    }

    #[test]
    fn waves_on_an_l0_resident_node_reach_the_peak_box_rate() {
        let m = series_x();
        let mut model = MemoryModel::new(&m);
        // 16 waves per CU, 200 instructions of 32 lanes each, all at block 0.
        let d = dispatch(m.compute_units * 16, 200, 32, |_, _, _| 0);
        model.run(&d, None);
        let s = model.finish();
        let rate = 4.0 * s.td_clocks as f64 / s.seconds() / 1e9;
        assert!((rate / 379.6 - 1.0).abs() < 0.01, "{rate} G box tests/s");
        assert_eq!(s.bound, Some(Bound::Td));
    }

    #[test]
    fn streaming_distinct_nodes_reaches_the_dram_bandwidth() {
        let m = series_x();
        let mut model = MemoryModel::new(&m);
        let waves = m.compute_units * m.wave_slots_per_cu();
        // Every lane of every instruction a new 128-byte node (two blocks).
        let d = dispatch(waves, 64, 32, |w, i, l| {
            (((w * 64 + i) * 32 + l) * 2) | FETCH_128
        });
        model.run(&d, None);
        let s = model.finish();
        let gb_per_s = s.dram_bytes as f64 / s.seconds() / 1e9;
        assert_eq!(s.dram_bytes, s.fetch_bytes);
        assert!(
            (gb_per_s / m.dram.bandwidth_gb_per_s - 1.0).abs() < 0.02,
            "{gb_per_s} GB/s"
        );
        assert_eq!(s.bound, Some(Bound::Bandwidth));
        assert_eq!(s.busiest_link, Some("DRAM"));
    }

    #[test]
    fn lanes_of_one_instruction_reading_one_line_hit_after_the_first() {
        let mut model = MemoryModel::new(&series_x());
        let d = dispatch(1, 1, 32, |_, _, l| l);
        model.run(&d, None);
        let s = model.finish();
        // 16 lines (two 64-byte blocks each): 16 misses, 16 hits.
        assert_eq!(s.l0.accesses, 32);
        assert_eq!(s.l0.hits, 16);
        assert_eq!(s.l1.accesses, 16);
    }
}
