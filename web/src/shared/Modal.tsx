/**
 * A modal `<dialog>`: the browser traps focus inside it and closes it on Escape; on
 * closing, focus goes back to whatever had it when the dialog opened.
 */
import { useEffect, useRef, type ReactNode } from "react";

interface ModalProps {
  open: boolean;
  /** Called however the dialog closed (Escape, a button, the parent). */
  onClose: () => void;
  labelledBy: string;
  className?: string;
  children: ReactNode;
}

export function Modal({ open, onClose, labelledBy, className, children }: ModalProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<HTMLElement | null>(null);

  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      dialog.showModal();
      // the element a dialog wants focused first (the browser would pick the first control)
      dialog.querySelector<HTMLElement>("[data-autofocus]")?.focus();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open]);

  const closed = () => {
    const back = opener.current;
    opener.current = null;
    if (back?.isConnected) back.focus();
    onClose();
  };

  return (
    <dialog ref={ref} className={className} aria-labelledby={labelledBy} onClose={closed}>
      {open && children}
    </dialog>
  );
}

interface ConfirmProps {
  open: boolean;
  title: string;
  /** The confirming button's text ("Delete"). */
  confirmLabel: string;
  busy?: boolean;
  onConfirm: () => void;
  /** Called whenever the dialog closes: Cancel, Escape, or the parent closing it. */
  onClose: () => void;
  children?: ReactNode;
}

/** "Are you sure?": a title, details, Cancel (focused first) and the confirming button. */
export function ConfirmDialog({
  open,
  title,
  confirmLabel,
  busy = false,
  onConfirm,
  onClose,
  children,
}: ConfirmProps) {
  return (
    <Modal open={open} onClose={onClose} labelledBy="confirm-title" className="confirm">
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          onConfirm();
        }}
      >
        <h2 id="confirm-title">{title}</h2>
        {children}
        <div className="dialog-actions">
          <button type="button" data-autofocus onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="danger" disabled={busy}>
            {confirmLabel}
          </button>
        </div>
      </form>
    </Modal>
  );
}
