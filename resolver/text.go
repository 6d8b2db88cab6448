package resolver

import "fmt"

// choiceWords say why the resolver chose an entry.
var choiceWords = map[string]string{
	ChoiceOwnHost:   "this host's own copy",
	ChoiceAnswering: "its beacon is fresh and it answers its question",
	ChoiceDirectory: "first in the directory",
}

// Line is the text form of a resolved endpoint: the service, its host,
// its address and why it was chosen.
func (e Endpoint) Line() string {
	return fmt.Sprintf("%s on %s at %s (%s)", e.Service, e.Host, e, choiceWords[e.Choice])
}
