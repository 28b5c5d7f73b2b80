"""The kernel the book build runs its notebooks in: IPython's kernel, with an output channel
that never drops a message.

The kernel sends a cell's output (display data, widget models, status) on its IOPub socket, a
ZeroMQ publisher.  A publisher drops what it cannot queue: with the default high-water mark of
1,000 messages, a cell that makes a few thousand widget models (an explorer of eight runs) loses
some of them whenever the build reads more slowly than the kernel writes, as on a busy machine,
and the page then holds a view whose models were never saved.  Here the publisher's queue is
unbounded (high-water mark 0), so a slow reader only makes the kernel's messages wait.
Everything else is ipykernel's ``IPKernelApp``.
"""
import zmq
from ipykernel.kernelapp import IPKernelApp


class BookKernelApp(IPKernelApp):
    """``IPKernelApp`` whose IOPub publisher queues every message (``SNDHWM = 0``)."""

    def init_iopub(self, context):
        # options set on the context are the defaults of the sockets it makes next: the
        # publisher is made (and bound) inside IPKernelApp.init_iopub
        context.setsockopt(zmq.SNDHWM, 0)
        try:
            super().init_iopub(context)
        finally:
            context.sockopts.pop(zmq.SNDHWM, None)


if __name__ == "__main__":
    BookKernelApp.launch_instance()
