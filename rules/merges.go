package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
)

// What a pull request merges, and whether a base change brings changes no
// one approved (DESIGN §2: a retarget that brings no new changes keeps what
// was approved and verified).

// unseenPrefix marks the entry of a file whose change GitHub lists without a
// patch (binary, or too large to show): what it changes on the base side
// cannot be told from the list, so a base change never finds it the same.
const unseenPrefix = "unseen:"

// MergeEntry fingerprints one file of a pull request's file list: its
// status, the name it was renamed from, and its patch (GitHub's three-dot
// diff against the merge base of head and base). patch nil: GitHub showed
// none; then only the head's blob is known.
func MergeEntry(status, previous, blob string, patch *string) string {
	h := sha256.New()
	h.Write([]byte(status + "\x00" + previous + "\x00"))
	if patch == nil {
		h.Write([]byte("\x00" + blob))
		return unseenPrefix + hex.EncodeToString(h.Sum(nil))[:24]
	}
	h.Write([]byte(*patch))
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// MergesOf fingerprints a whole file list (file name -> MergeEntry): what
// approvals of a head count for (PRFacts.Merges).
func MergesOf(changes map[string]string) string {
	h := sha256.New()
	for _, f := range slices.Sorted(maps.Keys(changes)) {
		h.Write([]byte(f + "\x00" + changes[f] + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// NewChanges are the files whose change differs between the file list read
// before a base change (was) and after it (now), sorted: listed now and not
// before, listed before and not now, or listed with another change, or
// listed without a patch (its base side unknown). accounted reports whether a
// file's change now is one the new base already holds (the same change,
// merged into it by another pull request); those are left out.
func NewChanges(was, now map[string]string, accounted func(file, entry string) bool) []string {
	var out []string
	for f, e := range now {
		if (was[f] != e || strings.HasPrefix(e, unseenPrefix)) && (accounted == nil || !accounted(f, e)) {
			out = append(out, f)
		}
	}
	for f := range was {
		if _, ok := now[f]; !ok {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
