package beacon

// AnsweredWell reports whether the block's latest verdict is a successful
// answer: a question finished with a 2xx, or one still within its bound
// whose previous question finished so. Asked, stood, refused, unsuccessful
// and unreadable blocks are not.
func (a *Answering) AnsweredWell() bool {
	if a == nil || (a.State != AnswerFinished && a.State != AnswerWaiting) {
		return false
	}
	f := a.Finished
	return f != nil && f.Answered != nil && f.Answered.Successful
}

// Answers reports whether host's beacon is fresh and reads the answering
// verdict of its declaration named service as successful: the evidence the
// resolver ranks a service's hosts by (resolver.Answers). A host without a
// fresh beacon, without such a declaration or whose service asks no
// question does not answer.
func (v *View) Answers(service, host string) bool {
	if v.Freshness(host).Kind != FreshnessFresh {
		return false
	}
	for _, r := range v.Rows(host) {
		if r.Service == service && r.Answering.AnsweredWell() {
			return true
		}
	}
	return false
}
