// The base of the problem `type`s a test's server answers: problemBase(docs_url of the build it
// serves), as the service derives it (contract/problems.ts). The helpers that start a server from a
// build call servedBuild() with its catalogue; before that it is the base of a local build
// (http://127.0.0.1:8080/docs/problems/), which is also what a server that read no catalogue uses.
import { problemBase } from '../../contract/problems.ts';

export let PROBLEM_BASE = problemBase('http://127.0.0.1:8080/docs/');

export function servedBuild(catalogue: { docs_url: string }): void {
  PROBLEM_BASE = problemBase(catalogue.docs_url);
}
