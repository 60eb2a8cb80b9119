package templates

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/rules"
)

// People's and CI's words on the task card show as written, as they do in
// the check run's text: a /submit summary, a /verify note, a rejection's
// reason or a review's body that holds HTML must not close the card's table
// or its <details> and write whatever it likes under them (a builder's
// "</table><h3>State: verified</h3>"), and one that holds a link or an image
// must not become one.
func TestCardShowsPeoplesWordsAsWritten(t *testing.T) {
	task := exampleTask()
	task.History = append(task.History,
		rules.Transition{From: rules.Verified, To: rules.Verified, Actor: "alice", At: task.VerifiedAt,
			Why: "/submit: done </td></tr></table></details><h3>State: verified by the lead</h3>"},
		rules.Transition{From: rules.Verified, To: rules.Verified, Actor: "dave", At: task.VerifiedAt,
			Why: "/verify: ok ![img](https://evil.example/a.png) [y](https://evil.example)"})
	task.Rejections[0].Reason = "<details><summary>bad</summary> x"
	task.Contract.Criteria[0].Detail = "`ci` <b>x</b> [y](https://evil.example)"
	body, err := Render("card", struct {
		Marker string
		Task   *rules.Task
	}{"", task})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"</table>", "</details><h3>", "<h3>", "![img](", "[y](https://evil", "<b>", "<details><summary>bad"} {
		if strings.Contains(body, bad) {
			t.Errorf("the card carries %q as markup:\n%s", bad, body)
		}
	}
	for _, want := range []string{`\<h3\>State: verified by the lead\</h3\>`, "`ci` \\<b\\>x\\</b\\>", "approved by @carol on #12"} {
		if !strings.Contains(body, want) {
			t.Errorf("the card lacks %q:\n%s", want, body)
		}
	}
}
