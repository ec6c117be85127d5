#include "CShims.h"

void cshims_object_set_string(gpointer object, const char *property, const char *value) {
    g_object_set(object, property, value, NULL);
}

void cshims_object_set_boolean(gpointer object, const char *property, gboolean value) {
    g_object_set(object, property, value, NULL);
}

void cshims_object_set_double(gpointer object, const char *property, double value) {
    g_object_set(object, property, value, NULL);
}

void cshims_object_set_object(gpointer object, const char *property, gpointer value) {
    g_object_set(object, property, value, NULL);
}

double cshims_object_get_double(gpointer object, const char *property) {
    double value = 0;
    g_object_get(object, property, &value, NULL);
    return value;
}

gulong cshims_connect_element_signal(gpointer instance, const char *signal,
                                     cshims_element_callback callback, gpointer data,
                                     GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(callback), data, destroy, 0);
}

void cshims_disconnect(gpointer instance, gulong handler) {
    g_signal_handler_disconnect(instance, handler);
}

GstClockTime cshims_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }

GstElementFactoryListType cshims_factory_type_audio_decodable(void) {
    return GST_ELEMENT_FACTORY_TYPE_DECODER | GST_ELEMENT_FACTORY_TYPE_DEMUXER |
           GST_ELEMENT_FACTORY_TYPE_PARSER;
}

const char *cshims_object_name(gpointer object) { return GST_OBJECT_NAME(object); }

gpointer cshims_message_source(GstMessage *message) { return GST_MESSAGE_SRC(message); }
