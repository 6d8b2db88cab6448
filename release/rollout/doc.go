// Package rollout brings hosts to the release versions the registry
// declares and shows where they stand: `stado release version show`
// (ShowFleet from beacons with no SSH, ShowHost over one host's channel,
// ShowTarget naming the host by its registry target) and `stado release
// version converge` (Converge: canary first, then a bounded number of hosts
// at once, stopping at the first failure).
//
// It decides and orders; each host does the work of one activation in one
// channel call (channel.Host's ReleaseActivate, served by release/hostend),
// so rollout never touches a host's files itself.
//
// stado imports, and only for this:
//   - channel: the Host and Connector it acts through, and the modes;
//   - beacon: the releases block each beacon carries and the reader's
//     freshness judgement of a beacon;
//   - registry: the document (targets, their services' products, the
//     directory's ports);
//   - release: the activation request and result, and the outcomes;
//   - refusal: the codes of what it refuses and of a refused host.
//
// It must never import channel/sshclient: cli builds the connector and
// hands it in, as it does for fleet.
package rollout
