/**
 * What build is running, for `bridgeline_build_info`: the version is package.json's; the commit is
 * the one `npm run build` stamped into dist/build-info.json (scripts/build-service.mjs: `git rev-parse
 * HEAD`, or "unknown" outside a git checkout). Run from the sources (tsx), there is no stamp: "dev".
 */
import fs from "node:fs";

export interface BuildInfo {
  readonly version: string;
  readonly commit: string;
}

export function readBuildInfo(): BuildInfo {
  // src/ and dist/ both sit beside package.json.
  const manifest = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  let commit = "dev";
  try {
    const stamp = JSON.parse(fs.readFileSync(new URL("./build-info.json", import.meta.url), "utf8")) as {
      commit?: unknown;
    };
    if (typeof stamp.commit === "string") commit = stamp.commit;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return { version: manifest.version, commit };
}
