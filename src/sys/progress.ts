/**
 * A process-wide count of answers that calls got from what they wait on outside the process (an etcd member's
 * reply, for now). The resident server's places (resident/places.ts) read it as a sign that calls holding every
 * place are being served, slowly, rather than stuck: a call that waits for a place then keeps waiting instead of
 * being handed back to its caller (which would add one more program to an overloaded node, and whose own call
 * would meet the same slow service). Counting costs one increment; nothing reads it outside the server.
 * @module
 */

let answers = 0;

/** A call in this process got an answer from a service outside it. */
export function noteAnswer(): void {
  answers++;
}

/** Answers noted so far in this process. */
export function answersNoted(): number {
  return answers;
}
