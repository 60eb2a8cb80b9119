package effects

import "sync"

// madeLabelsMax bounds the labels known to exist that are kept in memory
// (about a thousand repositories' worth): the store remembers them all, so
// one forgotten costs a read of the store, not of GitHub.
const madeLabelsMax = 8192

// madeLabels is a bounded set of MadeLabelKeys: when full, a quarter of it
// (any) is forgotten.
type madeLabels struct {
	mu  sync.Mutex
	set map[string]struct{}
	max int // 0: madeLabelsMax
}

func (s *madeLabels) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[key]
	return ok
}

func (s *madeLabels) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := s.max
	if limit <= 0 {
		limit = madeLabelsMax
	}
	if s.set == nil {
		s.set = map[string]struct{}{}
	}
	if _, ok := s.set[key]; !ok && len(s.set) >= limit {
		forget := max(limit/4, 1)
		for k := range s.set {
			if forget == 0 {
				break
			}
			delete(s.set, k)
			forget--
		}
	}
	s.set[key] = struct{}{}
}

func (s *madeLabels) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, key)
}

func (s *madeLabels) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.set)
}
