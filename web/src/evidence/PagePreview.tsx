/**
 * The page an evidence passage came from, beside its text: a thumbnail with the
 * passage highlighted, which opens zoomable; or, when the page cannot be shown, why
 * (the passage's text stays the evidence). Formats without pages show nothing extra.
 */
import { useEffect, useRef, useState } from "react";

import { describeError } from "../api/client";
import { getChunkPreview, getPreviewImage } from "../api/resources";
import type { ChunkPreview, Source } from "../api/types";
import { previewSpan } from "./quotes";
import { boxStyle, MAX_ZOOM, MIN_ZOOM, nextZoom, pageLabel, previewNote } from "./preview";
import { Modal } from "../shared/Modal";

export type PreviewState =
  | { status: "loading" }
  | { status: "ready"; preview: ChunkPreview; src: string }
  | { status: "unavailable"; preview: ChunkPreview }
  | { status: "error"; message: string };

/** The page image with its highlight boxes laid over it (they scale with the image). */
function PageImage({ preview, src, alt }: { preview: ChunkPreview; src: string; alt: string }) {
  return (
    <span className="page-frame">
      <img src={src} alt={alt} width={preview.width ?? undefined} height={preview.height ?? undefined} />
      {(preview.highlights ?? []).map((box, i) => (
        <span key={i} className="page-mark" style={boxStyle(box)} aria-hidden="true" />
      ))}
    </span>
  );
}

/** What a source card shows for its page, by state (no effects: rendered in tests). */
export function PageFigure({
  state,
  fileName,
  onZoom,
}: {
  state: PreviewState;
  fileName: string;
  onZoom: () => void;
}) {
  if (state.status === "loading") return null;
  if (state.status === "error") {
    return (
      <p className="notice page-unavailable" role="note">
        <strong>The page preview failed.</strong> {state.message} The passage&apos;s text is shown.
      </p>
    );
  }
  if (state.status === "unavailable") {
    const note = previewNote(state.preview);
    if (note === null) return null;
    return (
      <p
        className="notice notice-warn page-unavailable"
        role="note"
        data-reason={state.preview.reason ?? undefined}
      >
        <strong>{note.title}.</strong> {note.message} The passage&apos;s text is shown instead.
      </p>
    );
  }
  const label = pageLabel(state.preview, fileName);
  return (
    <figure className="page-preview" data-page={state.preview.page ?? undefined}>
      <button type="button" className="page-thumb" onClick={onZoom} title="Zoom the page">
        <PageImage
          preview={state.preview}
          src={state.src}
          alt={`${label} of ${fileName}, the passage highlighted`}
        />
        <span className="visually-hidden">Zoom {label.toLowerCase()}</span>
      </button>
      <figcaption>{label}</figcaption>
    </figure>
  );
}

/** The zoomed page in a dialog: bigger or smaller in steps, opened at the highlight. */
export function PageZoom({
  preview,
  src,
  fileName,
  onClose,
}: {
  preview: ChunkPreview;
  src: string;
  fileName: string;
  onClose: () => void;
}) {
  const [zoom, setZoom] = useState<number>(MIN_ZOOM);
  const scroller = useRef<HTMLDivElement>(null);
  const label = pageLabel(preview, fileName);
  useEffect(() => {
    scroller.current?.querySelector(".page-mark")?.scrollIntoView({ block: "center", inline: "nearest" });
  }, [zoom]);
  return (
    <div className="page-zoom">
      <header>
        <h2 id="page-zoom-title">
          {label} <span className="muted">{fileName}</span>
        </h2>
        <div className="page-zoom-tools" role="group" aria-label="Zoom">
          <button type="button" onClick={() => setZoom(nextZoom(zoom, -1))} disabled={zoom <= MIN_ZOOM}>
            <span aria-hidden="true">{"\u2212"}</span>
            <span className="visually-hidden">Zoom out</span>
          </button>
          <output aria-live="polite">{Math.round(zoom * 100)}%</output>
          <button type="button" onClick={() => setZoom(nextZoom(zoom, 1))} disabled={zoom >= MAX_ZOOM}>
            <span aria-hidden="true">+</span>
            <span className="visually-hidden">Zoom in</span>
          </button>
          <button type="button" onClick={() => setZoom(MIN_ZOOM)}>
            Fit
          </button>
          <button type="button" data-autofocus onClick={onClose}>
            Close
          </button>
        </div>
      </header>
      <div className="page-zoom-scroll" ref={scroller}>
        <div className="page-zoom-page" style={{ width: `${zoom * 100}%` }}>
          <PageImage preview={preview} src={src} alt={`${label} of ${fileName}, the passage highlighted`} />
        </div>
      </div>
    </div>
  );
}

/** Loads a source's page preview (the envelope, then the image with the API key). */
export function PagePreview({ source }: { source: Source }) {
  const [state, setState] = useState<PreviewState>({ status: "loading" });
  const [zoomed, setZoomed] = useState(false);
  const span = previewSpan(source);
  const start = span?.start ?? null;
  const end = span?.end ?? null;
  useEffect(() => {
    const controller = new AbortController();
    let objectUrl: string | null = null;
    setState({ status: "loading" });
    void (async () => {
      try {
        const quote = start !== null && end !== null ? { start, end } : null;
        const preview = await getChunkPreview(source.chunk_id, controller.signal, quote);
        if (!preview.available || !preview.image_url) {
          setState({ status: "unavailable", preview });
          return;
        }
        const blob = await getPreviewImage(preview.image_url, controller.signal);
        if (controller.signal.aborted) return;
        objectUrl = URL.createObjectURL(blob);
        setState({ status: "ready", preview, src: objectUrl });
      } catch (exc) {
        if (!controller.signal.aborted) setState({ status: "error", message: describeError(exc) });
      }
    })();
    return () => {
      controller.abort();
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [source.chunk_id, start, end]);
  return (
    <>
      <PageFigure state={state} fileName={source.file_name} onZoom={() => setZoomed(true)} />
      {state.status === "ready" && (
        <Modal
          open={zoomed}
          onClose={() => setZoomed(false)}
          labelledBy="page-zoom-title"
          className="page-zoom-dialog"
        >
          <PageZoom
            preview={state.preview}
            src={state.src}
            fileName={source.file_name}
            onClose={() => setZoomed(false)}
          />
        </Modal>
      )}
    </>
  );
}
