// Package printer is the one printer layer of the command line: a result
// as exactly one JSON document with its kind as the first field (a large
// list streamed a row at a time, with the bytes json.MarshalIndent would
// write), or as text in which every value from a host or a service is
// escaped so that a terminal never obeys it, with tables aligned and cut to
// the terminal's width.
//
// It imports no stado package: cli hands it finished results.
package printer
