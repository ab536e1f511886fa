# chat-ui-agent-runtime: pinned, patched Pi 0.84.2 with the approval gate, the bridge and a health endpoint.
# Legacy-builder compatible (no BuildKit-only syntax). Layers are ordered so the lockfile install is cached
# until package.json or package-lock.json change, and the patched Pi until the patches change too.
ARG NODE_IMAGE=node:22-bookworm-slim

# --- deps: the whole lockfile (dev dependencies included), no install scripts --------------------------------
# Shared by the two stages below. The pinned-Node package's install script stays off: the base image's Node
# runs the build, and the bundles' guard checks it.
FROM ${NODE_IMAGE} AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

# --- build: bundle the runtime entry points (esbuild) -------------------------------------------------------
FROM deps AS build
# [isolation] The Landlock helper (agent-runtime/sandbox/landlock-exec.c) is compiled here; the runtime stage
# gets only the binary. Without a compiler the build fails (CHAT_UI_AGENT_REQUIRE_LANDLOCK_HELPER).
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
ENV CHAT_UI_AGENT_REQUIRE_LANDLOCK_HELPER=1
COPY tsconfig.json ./
COPY patches/ patches/
COPY scripts/ scripts/
COPY agent-runtime/ agent-runtime/
COPY bridge/ bridge/
RUN node scripts/node-guard.mjs image-build && node scripts/build.mjs

# --- pi: the patched Pi and only what it needs at run time ---------------------------------------------------
# Fail closed: the upstream shape check, patch-package and the post-check (scripts/pi-patches.mjs apply, our
# postinstall) run on their own line, and any failure stops the build. Then the tree is pruned to what the
# bundles leave external (Pi and its dependencies, from the lockfile), maps and third-party declarations are
# dropped, and the post-check runs again on what will ship (scripts/prune-runtime-modules.mjs).
FROM deps AS pi
COPY patches/ patches/
COPY scripts/node-guard.mjs scripts/pi-patches.mjs scripts/build.mjs scripts/build-landlock.mjs scripts/prune-runtime-modules.mjs scripts/
RUN npm run postinstall
RUN node scripts/prune-runtime-modules.mjs

# --- runtime -------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE}
# tini is PID 1 (signals reach our processes, zombies are reaped); curl and /bin/sh serve sbx-server's bootstrap.
# Documentation and translations are not installed (the official slim bases exclude the same paths), and
# apt's package cache and lists go in the same layer (a base without docker's apt-clean hook keeps every .deb).
# git keeps its hard dependency perl (git's own scripts and the agent's one-liners use it). fd-find: Pi's find tool
# runs fd (as fdfind) and would otherwise try to download it. git ignores bare repositories it was not pointed at
# (safe.bareRepository=explicit): an embedded one in a cloned repo cannot set hooks or config for the agent's git.
RUN printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/lintian/*' \
      'path-exclude=/usr/share/locale/*' 'path-include=/usr/share/locale/locale.alias' \
      > /etc/dpkg/dpkg.cfg.d/chat-ui-agent-nodoc \
 && apt-get update \
 && apt-get install -y --no-install-recommends tini git ripgrep fd-find ca-certificates curl \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && git config --system safe.bareRepository explicit

# `agent` must be uid 1000 (HF Spaces); the official base ships `node` with that uid, so it gives way.
RUN set -eu; \
    old_user="$(getent passwd 1000 | cut -d: -f1 || true)"; \
    if [ -n "$old_user" ]; then userdel --remove "$old_user" 2>/dev/null || userdel "$old_user"; fi; \
    old_group="$(getent group 1000 | cut -d: -f1 || true)"; \
    if [ -n "$old_group" ]; then groupdel "$old_group"; fi; \
    groupadd --gid 1000 agent; \
    useradd --uid 1000 --gid agent --create-home --home-dir /home/agent --shell /bin/bash agent; \
    install -d -o agent -g agent -m 0755 /workspace; \
    install -d -o root -g root -m 0755 /run/chat-ui-agent

# [isolation] Three principals: the bridge (root), Pi (`pi`, its own uid: provider keys, a private tree under the
# state dir) and the tools (`agent`). The state dir is the bridge's (root, 0700; the bridge opens it to 0711 so
# Pi reaches <state>/pi/, which belongs to Pi, 0700).
RUN useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pi \
 && install -d -o root -g root -m 0700 /var/lib/chat-ui-agent

WORKDIR /opt/chat-ui-agent
# The patched, pruned Pi, with the manifest that describes it and what re-checks it in place
# (`node scripts/pi-patches.mjs check`).
COPY --from=pi /src/node_modules/ /opt/chat-ui-agent/node_modules/
COPY --from=pi /src/package.json /src/package-lock.json /opt/chat-ui-agent/
COPY --from=pi /src/patches/ /opt/chat-ui-agent/patches/
COPY --from=pi /src/scripts/pi-patches.mjs /opt/chat-ui-agent/scripts/
COPY --from=build /src/build/opt/chat-ui-agent/ /opt/chat-ui-agent/
# Last: Pi's compile cache (/opt/chat-ui-agent/compile-cache), built by starting Pi once as root, as the bridge
# starts it, at the paths and with the Node it runs with here. The bridge hands it to Pi only where the tools
# cannot write it (the check below keeps it root's).
RUN ln -s /opt/chat-ui-agent/node_modules/.bin/pi /usr/local/bin/pi \
 && printf '#!/bin/sh\nexec node /opt/chat-ui-agent/policy-cli.mjs "$@"\n' > /usr/local/bin/chat-ui-agent-policy \
 && chmod 0755 /usr/local/bin/chat-ui-agent-policy \
 && printf '#!/bin/sh\nexec node /opt/chat-ui-agent/chat-ui-agent.mjs "$@"\n' > /usr/local/bin/chat-ui-agent \
 && chmod 0755 /usr/local/bin/chat-ui-agent \
 && chat-ui-agent --version \
 && pi --version \
 && rm -rf /tmp/node-compile-cache \
 && node /opt/chat-ui-agent/warm-compile-cache.mjs

# [isolation] The runtime (gate, bundles, Pi, the Landlock helper) must be root's and read-only for everyone else:
# checked, not chmod-ed (a recursive chmod would copy all of node_modules into a new layer). Fails the build.
RUN bad="$(find /opt/chat-ui-agent \( ! -user root -o ! -type l \( -perm -0002 -o -perm -0020 \) \) -print -quit)" \
 && if [ -n "$bad" ]; then echo "not root-owned or writable by others: $bad" >&2; exit 1; fi \
 && /opt/chat-ui-agent/landlock-exec --probe

LABEL org.opencontainers.image.title="chat-ui-agent-runtime" \
      org.opencontainers.image.description="Pinned, patched Pi runtime for chat-ui agent sandboxes" \
      org.opencontainers.image.source="https://github.com/huggingface/chat-ui-agent-runtime" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="MIT" \
      dev.chat-ui.pi.version="0.84.2"

ENV NODE_ENV=production \
    AGENT_POLICY=ask \
    AGENT_POLICY_PATH=/run/chat-ui-agent/policy \
    PORT=7860
EXPOSE 7860
# [isolation] The start user is root, so a launch that only overrides the command (HF Jobs: sbx-server, which
# starts the bridge) gets three principals. The health server (the default command) drops to `nobody` before
# it listens; a Space that runs the container as uid 1000 still gets it (and a bridge there is degraded,
# with Landlock between the three processes, and says so).
USER root
WORKDIR /workspace
# Healthy when every service of ours running here says so (found in /proc): the health server in a Space, the
# bridges sbx-server starts when the command runs sbx-server; with none of ours running yet, healthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "/opt/chat-ui-agent/healthcheck.mjs"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "/opt/chat-ui-agent/health-server.mjs"]
