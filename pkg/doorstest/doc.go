// Package doorstest holds one table test, TestDoors: every door into
// Latchkey (the JSON API, the console, /oauth2/*, the Lambda authorizer
// and the verify function URL) asked, by every kind of principal, to do
// every action on API keys and tokens, and the reads of a key's and its
// organization's usage and limits left, through the functions' Lambda
// handlers, on bbolt and on DynamoDB Local. Each cell is given the answer
// the rules of docs/security.md and docs/rate-limits.md give, or is
// declared not applicable with the reason; a cell that is neither fails the
// test. It has no code of its own.
package doorstest
