package emulator

import (
	"math"
	"math/rand/v2"
	"time"
)

// Every random choice is a pure function of the seed and what it is about
// (a job's source, input and occurrence; a request's number), so concurrent
// requests cannot change each other's draws and a rerun reproduces them.

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashString is FNV-1a.
func hashString(h uint64, s string) uint64 {
	if h == 0 {
		h = 14695981039346656037
	}
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func combine(seed uint64, parts ...uint64) uint64 {
	h := mix64(seed + 0x9e3779b97f4a7c15)
	for _, p := range parts {
		h = mix64(h ^ (p + 0x9e3779b97f4a7c15))
	}
	return h
}

// unitFloat returns a number in [0,1) determined by seed and parts.
func unitFloat(seed uint64, parts ...uint64) float64 {
	return float64(combine(seed, parts...)>>11) / (1 << 53)
}

// jobRand returns the generator of one job's random choices.
func jobRand(seed uint64, source, inputKey, input string, occurrence int64) *rand.Rand {
	h := hashString(hashString(hashString(0, source), inputKey), input)
	a := combine(seed, h, uint64(occurrence))
	return rand.New(rand.NewPCG(a, mix64(a)))
}

// RealisticJobTime is the default JobTimeFunc: a long-tailed log-normal
// distribution around the durations measured live (plain jobs on the sandbox
// site about 2 s, rendered jobs about 20 s, faults 7–39 s with a median of
// 17 s), capped at ten minutes.
func RealisticJobTime(r *rand.Rand, job JobInfo) time.Duration {
	median, sigma := 2.0, 0.45
	switch {
	case job.Faulted:
		median, sigma = 17, 0.45
	case job.Rendered:
		median, sigma = 20, 0.5
	}
	seconds := median * math.Exp(sigma*r.NormFloat64())
	const floor, ceiling = 0.5, 600.0
	seconds = min(max(seconds, floor), ceiling)
	return time.Duration(seconds * float64(time.Second))
}
