"""One module per API family: decode the request, authorize it, call the controller (a
:class:`controller.active.api.ControllerApi`) or ``controller.store``, encode the response. No ZooKeeper here:
a handler that needs ZooKeeper asks a store.
"""
