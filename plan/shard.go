package plan

import (
	"fmt"
	"math"
	"strings"

	"github.com/pgceiling/pgceiling/result"
)

// Limit is the kind of a workload's bottleneck, as far as sharding is concerned.
type Limit string

// The kinds of limit.
const (
	// LimitHotLock: the backends waited on row locks (Lock:transactionid, Lock:tuple):
	// transactions queue on the hottest wallet's row, which stays on one shard.
	LimitHotLock Limit = "hot_row_lock"
	// LimitWALIO: WAL flush or insert, other I/O or synchronous replication: a resource
	// each shard has its own of.
	LimitWALIO Limit = "wal_io"
	// LimitCPU: the server's (or the machine's) CPU: each shard has its own.
	LimitCPU Limit = "cpu"
	// LimitClient: the driver was the limit, not the server.
	LimitClient Limit = "client"
	// LimitUnattributed: no single bottleneck, or too few samples to say.
	LimitUnattributed Limit = "unattributed"
)

// bottleneck is the sweep's bottleneck line, naming the probe rate it describes as the
// report's sweeps table does (the search's line, else the first failing probe's above the
// knee, else the knee probe's), and its kind.
func bottleneck(s *result.Sweep) (string, Limit) {
	line, at := s.Bottleneck, s.BottleneckRate
	if line == "" {
		var above, knee *result.Probe
		for i := range s.Probes {
			p := &s.Probes[i]
			if p.Observation == nil || p.Observation.Bottleneck == "" {
				continue
			}
			switch {
			case p.TargetRate > s.Knee && (p.Verdict == result.Fail || p.Verdict == result.NotSteady):
				if above == nil || p.TargetRate < above.TargetRate {
					above = p
				}
			case p.Verdict == result.Pass && p.TargetRate == s.Knee:
				knee = p
			}
		}
		if above == nil {
			above = knee
		}
		if above == nil {
			return "", LimitUnattributed
		}
		line, at = above.Observation.Bottleneck, above.TargetRate
	}
	kind := limitOf(line)
	if at > 0 && !strings.HasPrefix(line, "at ") && !strings.HasPrefix(line, "above the knee") {
		u := result.RateUnit(s.Workload)
		if at > s.Knee {
			line = fmt.Sprintf("above the knee, at %s %s: %s", rate(at), u, line)
		} else {
			line = fmt.Sprintf("at the knee, %s %s: %s", rate(at), u, line)
		}
	}
	return line, kind
}

// limitOf classifies a bottleneck line (observe's wording), after the rate it names
// ("above the knee, at 1,000 tx/s: ", rows/s for copy).
func limitOf(line string) Limit {
	_, l, found := strings.Cut(line, "/s: ")
	if !found {
		l = line
	}
	switch {
	case strings.HasPrefix(l, "client:"):
		return LimitClient
	case strings.HasPrefix(l, "lock contention") && (strings.Contains(l, "Lock:transactionid") || strings.Contains(l, "Lock:tuple")):
		return LimitHotLock
	case strings.HasPrefix(l, "WAL flush"), strings.HasPrefix(l, "WAL insert"), strings.HasPrefix(l, "I/O"),
		strings.HasPrefix(l, "synchronous replication"):
		return LimitWALIO
	case strings.HasPrefix(l, "server CPU-bound"), strings.HasPrefix(l, "machine CPU-bound"), strings.HasPrefix(l, "backend CPU"):
		return LimitCPU
	}
	return LimitUnattributed
}

// Sharding is what sharding by wallet would buy: the ceiling with S shards is at most
// min(S × knee, Bound), where Bound is the hottest wallet's ceiling divided by its share
// of the transactions (that wallet's traffic stays on one shard however many there are).
type Sharding struct {
	// Key is what the shards split: "wallet", or "" for a workload without one (its
	// shards scale about linearly).
	Key      string  `json:"key"`
	Exponent float64 `json:"zipf_exponent,omitempty"`
	Wallets  int     `json:"wallets,omitempty"`
	// HottestShare is the hottest wallet's share of the wallet picks used below: the
	// measured one (MeasuredShare, over MeasuredPicks picks) when there are at least
	// minPicks, else the Zipf law's (ZipfShare = 1/H(W, s)).
	HottestShare  float64 `json:"hottest_share,omitempty"`
	ZipfShare     float64 `json:"zipf_share,omitempty"`
	MeasuredShare float64 `json:"measured_share,omitempty"`
	MeasuredPicks int64   `json:"measured_picks,omitempty"`
	// TxShare is the share of transactions that touch the hottest wallet: HottestShare
	// times the wallets a transaction picks (2 for transfer).
	TxShare float64 `json:"tx_share,omitempty"`
	// WalletCeilingTxS is the most transactions per second the hottest wallet's shard can
	// do for it.
	WalletCeilingTxS float64 `json:"wallet_ceiling_tx_s,omitempty"`
	// Bound is WalletCeilingTxS / TxShare: no number of shards lifts the ceiling past it
	// (0: no bound, the keyless case).
	Bound   Range  `json:"bound_tx_s"`
	BoundBy string `json:"bound_by,omitempty"`
	// MaxUsefulShards is the shard count beyond which adding shards buys nothing (0: no
	// such count).
	MaxUsefulShards int            `json:"max_useful_shards,omitempty"`
	Ceilings        []ShardCeiling `json:"ceilings"`
	Text            string         `json:"text"`
	Assumptions     []string       `json:"assumptions"`
}

// ShardCeiling is the ceiling's upper bound with a number of shards.
type ShardCeiling struct {
	Shards int     `json:"shards"`
	TxS    float64 `json:"tx_s"`
}

// minPicks is the fewest measured wallet picks whose hottest share is used instead of the
// Zipf law's.
const minPicks = 1000

// picksPerTx is how many distinct wallets a built-in workload's transaction picks (0: it
// has no wallet); a custom shape counts as one when its probes recorded a skew.
func picksPerTx(workload string) int {
	switch workload {
	case "transfer":
		return 2
	case "insert", "copy":
		return 0
	}
	return 1
}

// locksWallet reports whether the workload holds its wallets' row locks (FOR UPDATE)
// until commit.
func locksWallet(workload string) bool { return workload == "transfer" }

// ZipfShare is the hottest key's share of picks under Zipf's law with exponent s over n
// keys: 1 / H(n, s), H the generalised harmonic number (1/n for s = 0, uniform).
func ZipfShare(n int, s float64) float64 {
	if n <= 0 {
		return 0
	}
	h := 0.0
	for k := n; k >= 1; k-- { // smallest terms first
		h += math.Pow(float64(k), -s)
	}
	return 1 / h
}

func sharding(s *result.Sweep, w *Workload) *Sharding {
	K := w.Knee
	ppt := picksPerTx(s.Workload)
	var sk result.Skew
	var picks int64
	var hot float64
	for _, p := range s.Probes {
		if p.Skew.Keys > 0 && sk.Keys == 0 {
			sk = p.Skew
		}
		picks += p.Skew.Picks
		hot += p.Skew.HottestShare * float64(p.Skew.Picks)
	}
	if ppt == 0 || sk.Keys == 0 {
		sh := &Sharding{Bound: Range{}, Text: fmt.Sprintf("%s has no wallet to shard by: its rows spread evenly over the shards by their key, so S shards hold about S × %s %s",
			s.Workload, rate(K.Value), w.Unit)}
		sh.Ceilings = ceilings(K.Value, math.Inf(1), 8)
		sh.Assumptions = []string{
			"each shard is a server like this one, with this knee",
			"rows are routed by a key spread evenly over the shards (no hot key)",
			"the routing layer, the connection poolers and the clients are never the limit",
		}
		return sh
	}
	sh := &Sharding{Key: "wallet", Exponent: sk.Exponent, Wallets: sk.Keys, ZipfShare: ZipfShare(sk.Keys, sk.Exponent)}
	sh.HottestShare = sh.ZipfShare
	shareFrom := fmt.Sprintf("Zipf %g over %s wallets: 1/H(%d) = %s", sk.Exponent, rate(float64(sk.Keys)), sk.Keys, pct(sh.ZipfShare))
	if picks > 0 {
		sh.MeasuredShare, sh.MeasuredPicks = hot/float64(picks), picks
		if picks >= minPicks {
			sh.HottestShare = sh.MeasuredShare
			shareFrom = fmt.Sprintf("measured over %s picks; Zipf %g over %s wallets predicts %s", rate(float64(picks)),
				sk.Exponent, rate(float64(sk.Keys)), pct(sh.ZipfShare))
		}
	}
	sh.TxShare = math.Min(1, float64(ppt)*sh.HottestShare)
	touch := fmt.Sprintf("the hottest wallet gets %s of the wallet picks (%s)", pct(sh.HottestShare), shareFrom)
	if ppt > 1 {
		touch += fmt.Sprintf(", so %s of %s transactions touch it (%d wallets each)", pct(sh.TxShare), s.Workload, ppt)
	}
	assume := []string{
		"wallets are split over the shards by key, and each shard is a server like this one, with this knee",
		fmt.Sprintf("the traffic keeps this skew: %s of the transactions touch the hottest wallet, all on one shard, however many shards there are", pct(sh.TxShare)),
	}
	if ppt > 1 {
		assume = append(assume, "a "+s.Workload+" between wallets on two shards costs what a local one does; in practice it needs a two-phase commit, which lowers every figure here")
	}
	assume = append(assume, "the routing layer, the connection poolers and the clients are never the limit")

	kp := s.KneeProbe()
	switch {
	case w.Limit == LimitHotLock:
		// The hottest wallet's row lock was the limit here: its shard does for it what this
		// server did, K × share, so the whole stays at K however many shards there are.
		sh.WalletCeilingTxS = K.Value * sh.TxShare
		sh.Bound = K
		sh.BoundBy = "the hottest wallet's row lock, the limit measured here"
		hold := ""
		if kp != nil && kp.Service.P50 > 0 {
			hold = fmt.Sprintf(" (%s's service time p50 was %s ms at the knee)", s.Workload, num(kp.Service.P50, 1))
		}
		assume = append(assume, "the hottest wallet's row lock is held as long on its shard as it was here"+hold+
			"; a shard with less other work may commit faster and hold it for less")
	default:
		// A resource every shard has its own of: the hottest wallet's shard could give it
		// all of its knee, so the bound is K / share, unless that wallet's row lock (held
		// for a whole transaction) caps it first.
		sh.WalletCeilingTxS = K.Value
		sh.Bound = Range{Value: K.Value / sh.TxShare, Lo: K.Lo / sh.TxShare, Hi: K.Hi / sh.TxShare}
		sh.BoundBy = "a whole shard's knee for the hottest wallet alone"
		if locksWallet(s.Workload) && kp != nil && kp.Service.P50 > 0 {
			lockCeiling := 1000 / kp.Service.P50
			// It held the knee, so the lock's cap is at least the knee.
			if b := math.Max(lockCeiling/sh.TxShare, K.Value); b < sh.Bound.Value {
				sh.WalletCeilingTxS = lockCeiling
				sh.Bound = Range{Value: b, Lo: b, Hi: b}
				sh.BoundBy = fmt.Sprintf("the hottest wallet's row lock: held for a whole transaction (service p50 %s ms at the knee), at most %s transactions/s on that wallet",
					num(kp.Service.P50, 1), rate(lockCeiling))
				assume = append(assume, "the hottest wallet's row lock is held for the service time measured at the knee, and its transactions queue on it back to back")
			}
		}
		if w.Limit == LimitClient || w.Limit == LimitUnattributed {
			assume = append(assume, "the limit here was not attributed to the server ("+string(w.Limit)+"): these figures assume it is one each shard has its own of")
		}
	}
	sh.MaxUsefulShards = max(1, int(math.Ceil(sh.Bound.Value/K.Value-1e-9)))
	sh.Ceilings = ceilings(K.Value, sh.Bound.Value, sh.MaxUsefulShards)
	if sh.MaxUsefulShards == 1 {
		sh.Text = fmt.Sprintf("%s; sharding by wallet buys nothing: the ceiling stays at most %s however many shards (bound: %s)",
			touch, rangeText(sh.Bound, " "+w.Unit), sh.BoundBy)
	} else {
		sh.Text = fmt.Sprintf("%s; S shards hold at most min(S × %s, %s) %s (bound: %s); beyond %d shards adding shards buys nothing",
			touch, rate(K.Value), rangeText(sh.Bound, ""), w.Unit, sh.BoundBy, sh.MaxUsefulShards)
	}
	sh.Assumptions = assume
	return sh
}

// ceilings lists min(S × knee, bound) for S = 1, 2, 4, ... below useful (five at most),
// then useful itself.
func ceilings(knee, bound float64, useful int) []ShardCeiling {
	var out []ShardCeiling
	for s := 1; s < useful && len(out) < 5; s *= 2 {
		out = append(out, ShardCeiling{Shards: s, TxS: math.Min(float64(s)*knee, bound)})
	}
	return append(out, ShardCeiling{Shards: useful, TxS: math.Min(float64(useful)*knee, bound)})
}
