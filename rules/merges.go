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

// Excuse is a change a pull request merges that no approval of it covers,
// excused because its base already holds it (DESIGN §2: a retarget that
// brings nothing new keeps what was approved): pull request PR, from the old
// base branch, passed countersign's gate (its record) and was merged into
// the base as commit Merge, putting there the same changes of Files. They
// stay excused only while the base still holds them (Undone).
type Excuse struct {
	PR    int      `json:"pr"`
	Merge string   `json:"merge"`
	Files []string `json:"files"`
}

// Since is what a base branch did after a merged pull request's commit
// landed on it: GitHub's comparison of that commit with the branch's head.
type Since struct {
	// Status is GitHub's: identical, ahead (the commit is still on the
	// branch), behind or diverged (it is not: a force push); "" unknown.
	Status string
	// Files are the files changed on the branch since the commit.
	Files []string
	// Truncated: GitHub lists only part of the files changed.
	Truncated bool
}

// Undone are the files of e whose change the base may no longer hold,
// sorted: every one when the merged commit is no longer on the base, or when
// the comparison cannot tell (truncated, or unknown); else those changed on
// the base since (a revert, or any later change of the file: whether the
// file still holds the merged change cannot be told from a file list, so it
// is no longer excused).
func Undone(e Excuse, s Since) []string {
	var out []string
	changed := map[string]bool{}
	for _, f := range s.Files {
		changed[f] = true
	}
	all := s.Truncated || (s.Status != "identical" && s.Status != "ahead")
	for _, f := range e.Files {
		if all || changed[f] {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Approved are the changes that approvals of a pull request cover: its
// changes as read (PullRequest.Changes), less the files excused, which no
// approval of it covers. A base change compares what it merges now with
// these: an excused change counts as new again unless the new base holds it
// too.
func Approved(changes map[string]string, excused []Excuse) map[string]string {
	if len(excused) == 0 || changes == nil {
		return changes
	}
	out := maps.Clone(changes)
	for _, e := range excused {
		for _, f := range e.Files {
			delete(out, f)
		}
	}
	return out
}
