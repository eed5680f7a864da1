import type { ReactElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import type { GraphSourceList } from "../api/types";
import type { Turn } from "../turns/state";
import type { GraphBuildController } from "./useGraphBuild";
import { graphBuild, graphRetrieval, retrieval } from "../test/fixtures";
import { AnswerText } from "../chat/Answer";
import { Composer } from "../chat/Composer";
import { EvidencePanel } from "../evidence/EvidencePanel";
import { GraphBuilds } from "./GraphBuilds";
import { GraphScreen } from "./GraphScreen";
import { GraphSources } from "./GraphSources";
import { UploadResults } from "../shared/UploadResults";

function html(element: ReactElement): string {
  return renderToStaticMarkup(element).replace(/<!-- -->/g, "");
}

function graphTurn(overrides: Partial<Turn> = {}): Turn {
  const { query, condensed_query, method, chat_engine, sources, corpus, degraded, graph, days } =
    graphRetrieval(2);
  return {
    id: "t1",
    question: "Who is going to Lisbon?",
    target_corpus: "graph",
    status: "done",
    answer: "Maya and Jonas [2].",
    reasoning: "",
    retrieval: { query, condensed_query, method, chat_engine, sources, corpus, degraded, graph, days },
    cited: [2],
    timings_ms: {},
    error: null,
    ...overrides,
  };
}

describe("graph evidence", () => {
  it("shows day cards numbered as cited, the findings and the day-grain footer", () => {
    const page = html(<EvidencePanel turn={graphTurn()} focusedSource={2} dagsterUrl={null} />);
    expect(page).toContain('id="source-t1-2" class="source day-card is-focused is-cited"');
    expect(page).toContain('id="source-t1-1" class="source day-card"');
    expect(page).toContain('<span class="source-n">[2]</span> Lisbon trip<span class="pill">cited</span>');
    expect(page).toContain("<dt>Day</dt><dd>2026-03-03</dd>");
    expect(page).toContain("<dt>Messages</dt><dd>3</dd>");
    expect(page).toContain("Okay team, Lisbon is happening! (2)");
    expect(page).toContain('href="#/graph?day=iMessage%3B%2B%3Bchat618203554712%3A%3A2026-03-03"');
    expect(page).toContain("Found in the message graph");
    expect(page).toContain('href="#/graph?entity=Maya+Chen"');
    expect(page).toContain("<strong>Maya Chen</strong> \u2194 <strong>Lisbon</strong>");
    expect(page).toMatch(/Day-grain evidence: each card is a whole conversation day, not a single message/);
    expect(page).not.toContain("Answered from the documents");
  });

  it("links citations of a graph answer to its day cards", () => {
    const page = html(<AnswerText turnId="t1" text="Maya [2], not [3]." sourceCount={2} onCite={() => {}} />);
    expect(page).toContain('href="#source-t1-2"');
    expect(page).not.toContain("#source-t1-3");
  });

  it("says when a graph question was answered from the documents", () => {
    const evidence = retrieval(1, { target_corpus: "graph", degraded: "the message graph is switched off" });
    const turn = graphTurn({
      retrieval: { ...evidence, corpus: "rag", graph: null, days: [] },
      answer: "27 months [1].",
      cited: [1],
    });
    const page = html(<EvidencePanel turn={turn} focusedSource={null} dagsterUrl={null} />);
    expect(page).toContain("<strong>Answered from the documents.</strong> the message graph is switched off");
    expect(page).toContain('id="source-t1-1" class="source is-cited"');
    expect(page).not.toContain("Day-grain");
  });
});

describe("the corpus selector", () => {
  const props = { busy: false, onAsk: () => {}, onStop: () => {}, onCorpus: () => {} };

  it("offers Documents and Messages, with the choice checked", () => {
    const status = { state: "loading" } as const;
    const page = html(<Composer {...props} corpus="graph" graph={status} />);
    expect(page).toContain("<legend>Answer from</legend>");
    expect(page).toContain('<input type="radio" name="corpus" checked="" value="graph"/>Messages');
    expect(page).toContain('<input type="radio" name="corpus" value="rag"/>Documents');
    expect(page).toContain("over your messages");
  });

  it("disables Messages with the reason while the graph is switched off", () => {
    const off = { state: "disabled", message: "GRAPH_ENABLED is false." } as const;
    const page = html(<Composer {...props} corpus="graph" graph={off} />);
    expect(page).toContain('<input type="radio" disabled="" name="corpus" value="graph"/>Messages');
    expect(page).toContain('<input type="radio" name="corpus" checked="" value="rag"/>Documents');
    expect(page).toContain("Messages are unavailable: GRAPH_ENABLED is false.");
  });
});

const idle: GraphBuildController = {
  build: null,
  following: false,
  busy: false,
  error: null,
  notice: null,
  follow: () => {},
  launch: () => {},
  rebuild: () => {},
  reset: () => {},
  kill: () => {},
};

describe("the Graph screen's parts", () => {
  it("follows a build's days with a Kill button, and offers Resume on a killed one", () => {
    const running = html(
      <GraphBuilds
        list={{ builds: [graphBuild()] }}
        error={null}
        controller={{ ...idle, build: graphBuild(), following: true }}
        canBuild
      />,
    );
    expect(running).toContain("<strong>Build of chat.db running</strong>: 1 of 2 days processed");
    expect(running).toContain('<progress max="2" value="1" aria-label="Days processed">');
    expect(running).toMatch(/<button type="button" class="danger">Kill<\/button>/);
    // no second build while one is followed
    expect(running).toMatch(/<button type="button" class="primary" disabled="">Build the graph/);
    const killed = graphBuild({ state: "canceled", done: true, status: "CANCELED" });
    const after = html(
      <GraphBuilds
        list={{ builds: [killed] }}
        error={null}
        controller={{ ...idle, build: killed }}
        canBuild
      />,
    );
    expect(after).toContain("Build of chat.db killed");
    expect(after).toContain(">Resume</button>");
    expect(after).not.toContain(">Kill</button>");
  });

  it("lists archives with what the graph holds, and files that are not archives with why", () => {
    const list: GraphSourceList = {
      root: "/data/graph-docs",
      sources: [
        {
          path: "chat.db",
          companions: ["chat.db-wal", "chat.db-shm"],
          size_bytes: 180_224,
          modified_at: "2026-03-01T10:00:00Z",
          supported: true,
          kind: "imessage",
          reason: null,
          days: 2,
          threads: 2,
          first_day: "2026-03-02",
          last_day: "2026-03-02",
        },
        {
          path: "notes.db",
          companions: [],
          size_bytes: 4096,
          modified_at: "2026-03-01T10:00:00Z",
          supported: false,
          kind: null,
          reason: "SQLite without the Messages tables (missing: message, handle)",
          days: 0,
          threads: 0,
          first_day: null,
          last_day: null,
        },
      ],
    };
    const page = html(<GraphSources list={list} error={null} onChanged={() => {}} />);
    expect(page).toContain('<tr data-path="chat.db">');
    expect(page).toContain(" + chat.db-wal, chat.db-shm");
    expect(page).toContain("2 in 2 threads (2026-03-02)");
    expect(page).toContain("180 kB");
    expect(page).toContain("not an archive: SQLite without the Messages tables");
    expect(page).toContain("Stored in <code>/data/graph-docs</code>");
  });

  it("shows each uploaded file's outcome, refusals with their code and reason", () => {
    const page = html(
      <UploadResults
        summary="2 stored \u00b7 1 refused"
        rows={[
          { index: 0, name: "chat.db", status: "stored", stored: "chat.db", code: null, message: null },
          {
            index: 1,
            name: "notes.txt",
            status: "refused",
            stored: "notes.txt",
            code: "not_an_archive",
            message: "not an SQLite database",
          },
        ]}
      />,
    );
    expect(page).toContain('<tr class="upload-refused" data-name="notes.txt"><td>notes.txt</td>');
    expect(page).toContain("<code>not_an_archive</code> not an SQLite database");
    expect(page).toContain("<td><code>chat.db</code></td>");
  });

  it("says the graph is switched off instead of showing its sections", () => {
    const off = { state: "disabled", message: "GRAPH_ENABLED is false on this server." } as const;
    const page = html(
      <GraphScreen graph={off} onChanged={() => {}} entity={null} day={null} onNavigate={() => {}} />,
    );
    expect(page).toContain(
      "<strong>The message graph is switched off.</strong> GRAPH_ENABLED is false on this server.",
    );
    expect(page).not.toContain("Message archives");
    expect(page).not.toContain("Build the graph");
  });
});
