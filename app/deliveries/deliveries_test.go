package deliveries

import (
	"slices"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/countersign/countersign"
)

// The App manifest subscribes to exactly the webhook events countersign
// handles (less those GitHub sends every App): one list, not three.
func TestManifestSubscribesToHandledEvents(t *testing.T) {
	var manifest struct {
		DefaultEvents []string `yaml:"default_events"`
	}
	if err := yaml.Unmarshal(countersign.AppManifest, &manifest); err != nil {
		t.Fatal(err)
	}
	got, want := slices.Sorted(slices.Values(manifest.DefaultEvents)), slices.Sorted(slices.Values(Subscribed()))
	if !slices.Equal(got, want) {
		t.Errorf("app.yml default_events = %q; the registry subscribes to %q", got, want)
	}
	for _, e := range manifest.DefaultEvents {
		if !Webhook(e) {
			t.Errorf("app.yml subscribes to %s, which intake would ignore", e)
		}
	}
}

// Every event intake queues has an action decide acts on, and every internal
// event is decided (with no action) but never accepted from a webhook.
func TestRegistryIsConsistent(t *testing.T) {
	for _, h := range handled {
		if len(h.actions) == 0 {
			t.Errorf("%s is queued but no action of it is decided", h.event)
		}
	}
	for _, e := range internal {
		if !Handled(e, "") {
			t.Errorf("internal %s is not decided", e)
		}
		if Webhook(e) {
			t.Errorf("internal %s would be accepted from a webhook", e)
		}
	}
	if Handled("issues", "pinned") || Handled("push", "created") || Webhook("ping") {
		t.Error("the registry handles what it does not list")
	}
}
