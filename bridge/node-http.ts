// node:http without its ES-module facade (every runtime module that needs it imports this one). Importing it as
// an ES module reads every export, and a few lazy ones load Node's bundled undici: about 30 ms of the bridge's
// start, before Pi can start. The CommonJS object is the same API, loaded in about 5 ms.
import type * as Http from "node:http";

export const http = process.getBuiltinModule("node:http") as typeof Http;
